"""`python -m kindex_olap` runs the kindex CLI."""

from kindex_olap.cli.fast import main

main()
