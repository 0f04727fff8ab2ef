"""The documents kindex reads: validation, canonical JSON and identity, a run's flat rows. No SQL engine."""
