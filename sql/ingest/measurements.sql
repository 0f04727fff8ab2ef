-- Ingest step 3: the measurements rows of the staged runs: the timing statistics
-- (run.spec.timing.latencyNs, in whole ns) and the run's measurements list, tagged with where
-- each came from. A SELECT that kindex_olap.ingestion.writer (finish) materializes as
-- staged_measurements, then writes into the lake's measurements table.
SELECT run_id, metric, statistic, unit, value, sample_count, origin, source, year
FROM (
    SELECT run_id, 'latency' AS metric, e.key AS statistic, 'ns' AS unit, e.value::DOUBLE AS value,
           samples AS sample_count, 'timing' AS origin, source, year
    FROM (SELECT run_id, source, year, samples, unnest(map_entries(timing)) AS e FROM staged_runs)
    UNION ALL
    SELECT run_id, m.metric, m.statistic, m.unit, m.value, m.sampleCount, 'measurements',
           source, year
    FROM (SELECT run_id, source, year, unnest(spec_measurements) AS m FROM staged_runs)
)
