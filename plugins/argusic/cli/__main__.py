"""`python -m argusic.cli`: the same as the `argusic` console script."""

from argusic.cli.main import main

main()
