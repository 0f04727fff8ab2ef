"""The layers: what verdicts need that depends only on one environment's runs, stored per lake
commit (sql/schema/tables.sql: layer_*), so that no answer computes the noise model again."""
