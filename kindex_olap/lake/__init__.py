"""The lake's table format: snapshots, the writer lock, schemas, compaction."""
