"""The `kindex` command line: thin Typer layers over the library (entry point: kindex_olap.cli.app)."""
