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

-- The value in ns of a run's first measurement of latency `stat` in a unit of time
-- (model.facts._measured). Only those in ns were read: a p20/p80 given in us or ms was taken for
-- none, and the run's interval for a point (a verdict surer than its own spread allowed).
CREATE MACRO latency_unit_ns(unit) AS
    CASE unit WHEN 'ns' THEN 1 WHEN 'us' THEN 1e3 WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 END;
CREATE MACRO latency_measured(measurements, stat) AS
    list_transform(
        list_filter(measurements, lambda m: m.metric = 'latency' AND m.statistic = stat
                                            AND latency_unit_ns(m.unit) IS NOT NULL),
        lambda m: m.value * latency_unit_ns(m.unit))[1];
