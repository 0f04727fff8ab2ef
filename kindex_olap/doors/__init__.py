"""Ways out of kindex for other tools: the DuckDB shell, a database file, analyst-ready exports."""
