"""`python -m argusic.cli`: the same as the `argusic` console script."""

from argusic.cli.entry import main

main()
