"""`python -m kindex_olap` runs the kindex CLI."""

from kindex_olap.cli.app import app

app()
