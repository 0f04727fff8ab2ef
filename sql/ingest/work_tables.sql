-- The ingest's work table (in its DuckDB work database, never in the lake): runs as they will be
-- written, plus what finishing needs: seq (the first arrival of a run wins) and the raw timing
-- and measurements lists the measurements table is built from. Created by
-- kindex_olap.ingestion.writer after schema/tables.sql (it copies the runs table's columns).
CREATE TABLE staged_runs AS
SELECT
    *,
    NULL::BIGINT AS seq,
    NULL::MAP(VARCHAR, BIGINT) AS timing,
    NULL::STRUCT(metric VARCHAR, unit VARCHAR, statistic VARCHAR, value DOUBLE,
                 sampleCount BIGINT)[] AS spec_measurements
FROM runs
LIMIT 0;

-- The value of a run's first measurement of latency `stat` in ns (model.facts._measured).
CREATE MACRO latency_measured(measurements, stat) AS
    list_filter(measurements, lambda m: m.metric = 'latency' AND m.statistic = stat AND m.unit = 'ns')[1].value;
