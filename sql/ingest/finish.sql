-- Ingest step 2, once per ingest: the end of the flattening. Keep the first arrival (lowest seq)
-- of every run and drop runs the committed lake already holds. Loaded by
-- kindex_olap.ingestion.writer (finish), which sets runs_files, the committed lake's runs files.
-- Statements run in order.

DELETE FROM staged_runs AS s
USING (
    SELECT run_id, min(seq) AS first_seq
    FROM staged_runs
    GROUP BY run_id
    HAVING count(*) > 1
) AS repeated
WHERE s.run_id = repeated.run_id AND s.seq > repeated.first_seq;

DELETE FROM staged_runs AS s
USING (
    SELECT e.run_id
    FROM read_parquet(getvariable('runs_files')) AS e
    SEMI JOIN staged_runs AS mine ON mine.run_id = e.run_id
) AS known
WHERE s.run_id = known.run_id;
