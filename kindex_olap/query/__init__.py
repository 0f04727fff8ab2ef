"""The read side: a DuckDB connection over the lake's views, the shorthand, compiled queries, the Python API."""
