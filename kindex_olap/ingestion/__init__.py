"""Files -> documents -> staged rows -> one lake commit (the only writer of the lake besides compaction)."""
