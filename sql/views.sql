-- Views over the lake's committed snapshot. Every data file list comes from a DuckDB variable
-- (<table>_files) that kindex_olap.engine sets from the snapshot; engine.init_sql() replaces each
-- getvariable('<table>_files') with a quoted literal list for a persisted .duckdb file or the
-- DuckDB CLI. Partition columns live inside the files, so hive_partitioning is off.
--
-- Comparability: two runs are compared only when they share kernel, pass, workload digest,
-- environment digest, protocol digest (hence family, timer and statistic), metric and unit.
-- Ratios are baseline / candidate (> 1: the candidate is faster or smaller); the interval
-- [base p20 / cand p80, base p80 / cand p20] is conservative; a verdict is 'within noise' when
-- the interval contains 1. A run without p20/p80 contributes its central value to both ends.
--
-- Reference implementation of a cell (the default baseline): the first provider present in
-- ['torch', 'huggingface', 'torch_compile', 'torchcompile', 'megatron', 'megatron-unfused',
-- 'deepspeed_tiled'], else the alphabetically first provider whose name does not start with
-- 'liger'.

CREATE OR REPLACE VIEW runs AS
SELECT * FROM read_parquet(getvariable('runs_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW measurements AS
SELECT * FROM read_parquet(getvariable('measurements_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW environments AS
SELECT * FROM read_parquet(getvariable('environments_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW protocols AS
SELECT * FROM read_parquet(getvariable('protocols_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW workloads AS
SELECT * FROM read_parquet(getvariable('workloads_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW implementations AS
SELECT * FROM read_parquet(getvariable('implementations_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW operations AS
SELECT * FROM read_parquet(getvariable('operations_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW rejects AS
SELECT * FROM read_parquet(getvariable('rejects_files'), union_by_name = true, hive_partitioning = false);

CREATE OR REPLACE VIEW ingested_files AS
SELECT * FROM read_parquet(getvariable('ingested_files_files'), union_by_name = true, hive_partitioning = false);

-- One row per run with its dimensions, whatever its metric. Dimension tables may hold a digest
-- more than once (re-ingested documents), hence the any_value lookups.
CREATE OR REPLACE VIEW observations AS
WITH
    w AS (SELECT workload_digest, any_value(operation) AS operation,
                 any_value(operation_spec_digest) AS operation_spec_digest, any_value(dtype) AS dtype,
                 any_value(shape) AS shape, any_value(axes) AS axes
          FROM workloads GROUP BY workload_digest),
    i AS (SELECT implementation_digest, any_value(provider) AS provider,
                 any_value(display_name) AS display_name
          FROM implementations GROUP BY implementation_digest),
    o AS (SELECT operation_spec_digest, any_value(family) AS family
          FROM operations GROUP BY operation_spec_digest),
    e AS (SELECT environment_digest, any_value(name) AS name, any_value(product) AS product,
                 any_value(form_factor) AS form_factor, any_value(architecture) AS architecture
          FROM environments GROUP BY environment_digest),
    p AS (SELECT protocol_digest, any_value(comparability_family) AS family,
                 any_value(timer) AS timer
          FROM protocols GROUP BY protocol_digest)
SELECT
    r.run_id,
    coalesce(w.operation, r.kernel) AS kernel,
    o.family AS operation_family,
    r.pass,
    coalesce(i.provider, r.provider) AS provider,
    coalesce(i.display_name, r.display_name) AS implementation,
    e.product AS gpu,
    e.form_factor,
    e.architecture AS gpu_arch,
    e.name AS environment,
    p.family AS protocol_family,
    p.timer,
    r.metric,
    r.statistic,
    r.unit,
    r.value,
    w.shape,
    w.dtype,
    w.axes,
    r.version,
    r.observed_at,
    r.status,
    r.source,
    r.workload_digest,
    r.environment_digest,
    r.protocol_digest,
    r.implementation_digest
FROM runs r
LEFT JOIN w USING (workload_digest)
LEFT JOIN o ON o.operation_spec_digest = w.operation_spec_digest
LEFT JOIN i USING (implementation_digest)
LEFT JOIN e USING (environment_digest)
LEFT JOIN p USING (protocol_digest);

-- Latency runs: one row per run with median (the primary statistic's value), p20 and p80.
CREATE OR REPLACE VIEW latency AS
SELECT
    o.* EXCLUDE (value),
    o.value AS median_ns,
    r.latency_p20_ns AS p20_ns,
    r.latency_p80_ns AS p80_ns
FROM observations o
JOIN runs r USING (run_id)
WHERE o.metric = 'latency';

-- Runs of any metric with the central value and its p20/p80 spread (latency from runs' columns,
-- other metrics from measurements), the input of the pairing below.
CREATE OR REPLACE VIEW observed_values AS
SELECT * EXCLUDE (median_ns, p20_ns, p80_ns), median_ns AS value, p20_ns AS p20, p80_ns AS p80
FROM latency
UNION ALL BY NAME
SELECT o.*, m.p20, m.p80
FROM observations o
LEFT JOIN (
    SELECT run_id, metric, unit,
           any_value(value) FILTER (WHERE statistic = 'p20') AS p20,
           any_value(value) FILTER (WHERE statistic = 'p80') AS p80
    FROM measurements
    WHERE metric <> 'latency'
    GROUP BY ALL
) m USING (run_id, metric, unit)
WHERE o.metric <> 'latency';

-- Passed runs ranked inside their cell: newest first per implementation, and per version.
CREATE OR REPLACE VIEW ranked_runs AS
SELECT
    *,
    row_number() OVER (
        PARTITION BY kernel, pass, workload_digest, environment_digest, protocol_digest,
                     metric, statistic, unit, implementation_digest
        ORDER BY observed_at DESC, run_id) AS newest_rank,
    row_number() OVER (
        PARTITION BY kernel, pass, workload_digest, environment_digest, protocol_digest,
                     metric, statistic, unit, implementation_digest, version
        ORDER BY observed_at DESC, run_id) AS newest_in_version_rank,
    coalesce(list_position(['torch', 'huggingface', 'torch_compile', 'torchcompile', 'megatron',
                            'megatron-unfused', 'deepspeed_tiled'], provider),
             CASE WHEN provider LIKE 'liger%' THEN NULL ELSE 100 END) AS reference_rank
FROM observed_values
WHERE status = 'passed';

-- Pairs of comparable runs (every ordered pair of implementations of one cell).
-- pairing = 'latest': the newest passed run of each side, whatever their versions.
-- pairing = 'same_version': every pair of runs labelled with the same version;
-- latest_in_version marks the newest run of each side within that version.
CREATE OR REPLACE VIEW comparable_pairs AS
WITH cells AS (
    SELECT *,
           arg_min(provider, (reference_rank, provider)) FILTER (WHERE reference_rank IS NOT NULL)
               OVER (PARTITION BY kernel, pass, workload_digest, environment_digest,
                                  protocol_digest, metric, statistic, unit) AS reference_provider
    FROM ranked_runs
),
paired AS (
    SELECT 'latest' AS pairing, b AS base, c AS cand
    FROM cells b JOIN cells c
      ON  b.kernel = c.kernel AND b.pass = c.pass AND b.workload_digest = c.workload_digest
      AND b.environment_digest = c.environment_digest AND b.protocol_digest = c.protocol_digest
      AND b.metric = c.metric AND b.statistic = c.statistic AND b.unit = c.unit
      AND b.implementation_digest <> c.implementation_digest
    WHERE b.newest_rank = 1 AND c.newest_rank = 1
    UNION ALL
    SELECT 'same_version' AS pairing, b AS base, c AS cand
    FROM cells b JOIN cells c
      ON  b.kernel = c.kernel AND b.pass = c.pass AND b.workload_digest = c.workload_digest
      AND b.environment_digest = c.environment_digest AND b.protocol_digest = c.protocol_digest
      AND b.metric = c.metric AND b.statistic = c.statistic AND b.unit = c.unit
      AND b.implementation_digest <> c.implementation_digest
      AND b.version = c.version
)
SELECT
    pairing,
    base.kernel, base.operation_family, base.pass, base.gpu, base.form_factor, base.gpu_arch,
    base.environment, base.protocol_family, base.timer, base.metric, base.statistic, base.unit,
    base.shape, base.dtype, base.axes,
    cand.provider AS candidate, base.provider AS baseline,
    cand.implementation AS candidate_name, base.implementation AS baseline_name,
    base.provider IS NOT DISTINCT FROM base.reference_provider AS baseline_is_reference,
    cand.value AS candidate_value, cand.p20 AS candidate_p20, cand.p80 AS candidate_p80,
    base.value AS baseline_value, base.p20 AS baseline_p20, base.p80 AS baseline_p80,
    cand.version AS candidate_version, base.version AS baseline_version,
    cand.observed_at AS candidate_observed_at, base.observed_at AS baseline_observed_at,
    (base.newest_in_version_rank = 1 AND cand.newest_in_version_rank = 1) AS latest_in_version,
    base.workload_digest, base.environment_digest, base.protocol_digest,
    cand.run_id AS candidate_run_id, base.run_id AS baseline_run_id
FROM paired;

-- Ratios with their conservative interval and verdict, for latency and for memory.
CREATE OR REPLACE MACRO kindex_verdict(lo, hi) AS
    CASE WHEN lo > 1 THEN 'faster' WHEN hi < 1 THEN 'slower' ELSE 'within noise' END;

CREATE OR REPLACE VIEW speedups AS
SELECT
    * EXCLUDE (candidate_value, candidate_p20, candidate_p80, baseline_value, baseline_p20,
               baseline_p80),
    baseline_value / candidate_value AS speedup,
    coalesce(baseline_p20, baseline_value) / coalesce(candidate_p80, candidate_value) AS speedup_lo,
    coalesce(baseline_p80, baseline_value) / coalesce(candidate_p20, candidate_value) AS speedup_hi,
    kindex_verdict(speedup_lo, speedup_hi) AS verdict,
    candidate_value AS candidate_ns,
    baseline_value AS baseline_ns
FROM comparable_pairs
WHERE metric = 'latency' AND candidate_value > 0 AND baseline_value > 0;

CREATE OR REPLACE VIEW memory_ratios AS
SELECT
    * EXCLUDE (candidate_value, candidate_p20, candidate_p80, baseline_value, baseline_p20,
               baseline_p80),
    baseline_value / candidate_value AS memory_ratio,
    coalesce(baseline_p20, baseline_value) / coalesce(candidate_p80, candidate_value) AS ratio_lo,
    coalesce(baseline_p80, baseline_value) / coalesce(candidate_p20, candidate_value) AS ratio_hi,
    CASE WHEN ratio_lo > 1 THEN 'smaller' WHEN ratio_hi < 1 THEN 'larger'
         ELSE 'within noise' END AS verdict,
    candidate_value AS candidate_bytes,
    baseline_value AS baseline_bytes
FROM comparable_pairs
WHERE metric = 'memory' AND candidate_value > 0 AND baseline_value > 0;

-- Per kernel x pass x GPU environment x baseline x candidate, default pairing (newest runs).
CREATE OR REPLACE VIEW speedup_summary AS
SELECT
    kernel, pass, gpu, form_factor, environment, environment_digest, baseline, candidate,
    bool_and(baseline_is_reference) AS baseline_is_reference,
    count(*) AS cases,
    geomean(speedup) AS geomean_speedup,
    min(speedup) AS min_speedup,
    max(speedup) AS max_speedup,
    avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
    count(*) FILTER (WHERE verdict = 'within noise') AS within_noise
FROM speedups
WHERE pairing = 'latest'
GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, baseline, candidate;
