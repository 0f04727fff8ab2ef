-- Ingest of serving runs: the rows of an ingest's serving-run files (serving_inputs) whose run
-- digest the lake's serving_runs (serving_runs_files) lacks; the first of a digest by
-- observation time wins. Loaded by kindex_olap.ingestion.writer (write_serving), which sets
-- both variables and ingested_at.
INSERT INTO serving_runs BY NAME
SELECT * REPLACE (getvariable('ingested_at')::TIMESTAMP AS ingested_at)
FROM read_parquet(getvariable('serving_inputs'), union_by_name = true) AS n
WHERE NOT EXISTS (
    SELECT 1 FROM read_parquet(getvariable('serving_runs_files')) AS e
    WHERE e.run_digest = n.run_digest
)
QUALIFY row_number() OVER (PARTITION BY run_digest ORDER BY observed_at, kernelindex_id) = 1;
