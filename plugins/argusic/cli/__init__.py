"""The `argusic` command line: `main` registers the commands (the console script is
`argusic.cli.main:app`), `common` holds what they share."""
