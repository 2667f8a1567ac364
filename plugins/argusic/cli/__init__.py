"""The `argusic` command line: `main` registers the commands, `common` holds what they share; the
console script, `argusic.cli.entry:main`, sends `argusic build` to a build worker before importing
them."""
