-- History: every passed run of a time metric (latency, GPU MODE's score, ...), one row per run,
-- with the code it measured and the speedup against its cell's baseline run nearest in time.
-- Defined with the views (kindex_olap.query.engine); kindex_olap.query.history reads
-- history_runs_for, then sql/views/history_points.sql.
--
-- A cell is what views.sql pairs within: kernel, pass, workload, environment, protocol, metric,
-- statistic and unit (cell_key). A series is a cell and an implementation: its digest and the
-- run's own provider label (KernelIndex's curation gives some providers one digest: Liger's
-- liger and liger_tiled, huggingface and deepspeed_tiled). The cell's baseline is one provider
-- label, held fixed over time: the reference implementation (kindex_reference_rank over the
-- runs' own labels), else the implementation whose newest passed run is fastest. Each run is
-- paired with the baseline run closest to it in time, before or after (Liger writes both sides
-- of one invocation seconds apart); the baseline run's label and digest travel with it, so a
-- speedup step across a change of baseline is said to be one. invocation_baseline_ns is that
-- baseline run's value when it is of the same invocation (the same declared code or commit,
-- else no more than kindex_invocation_gap_seconds() apart): an environment shift is decided on
-- those alone.

CREATE OR REPLACE MACRO history_runs_for(kernel_filter, environment_filter, pass_filter)
AS TABLE
WITH
passed AS (
    SELECT o.*, rc.code_key, rc.declared_code,
           o.provider AS label,
           -- a 64-bit hash of the cell's keys: grouping and sorting by the concatenated text
           -- (five digests) cost several times more at 300k runs; collisions are negligible
           hash(kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
                statistic, unit) AS cell_key,
           value * kindex_time_unit_ns(unit) AS value_ns
    FROM observed_values_for(kernel_filter, environment_filter, pass_filter, NULL,
                             unit_filter := kindex_time_units()) o
    -- the code of the filter's environments only (a join's build side of every run's code
    -- cost each of the layers' groups of runs a scan of the lake's)
    JOIN (SELECT run_id AS coded_run_id, code_key, declared_code FROM run_code
          WHERE environment_filter IS NULL
             OR list_contains(environment_filter, environment_digest)) rc
      ON rc.coded_run_id = o.run_id
    WHERE status = 'passed' AND value > 0
),
newest AS (
    SELECT cell_key, implementation_digest, label,
           first(value ORDER BY observed_at DESC, run_id) AS value
    FROM passed GROUP BY cell_key, implementation_digest, label
),
cell AS (
    SELECT cell_key,
           kindex_reference_label(label) AS reference_label,
           kindex_fastest_implementation(implementation_digest, label, value) AS fastest
    FROM newest GROUP BY cell_key
),
sides AS (
    SELECT p.*,
           CASE WHEN p.label = c.reference_label THEN 'reference'
                WHEN c.reference_label IS NULL
                     AND p.implementation_digest = c.fastest.digest
                     AND p.label = c.fastest.label THEN 'fastest'
           END AS baseline_rule,
           coalesce(c.reference_label, c.fastest.label) AS baseline,
           CASE WHEN c.reference_label IS NULL THEN 'fastest' ELSE 'reference' END
               AS cell_baseline_rule
    FROM passed p JOIN cell c USING (cell_key)
),
-- The baseline run nearest in time: the cell's runs in time order, the last baseline run at or
-- before each run and the first at or after it (one sort per cell; two ASOF joins and the
-- joins back by run id cost three times as much at 300k runs).
nearest AS (
    SELECT *,
           last_value(CASE WHEN baseline_rule IS NOT NULL
                           THEN {'at': observed_at, 'ns': value_ns, 'run': run_id,
                                 'digest': implementation_digest, 'code': declared_code} END
                      IGNORE NULLS) OVER (
               PARTITION BY cell_key ORDER BY observed_at, run_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS before,
           first_value(CASE WHEN baseline_rule IS NOT NULL
                            THEN {'at': observed_at, 'ns': value_ns, 'run': run_id,
                                 'digest': implementation_digest, 'code': declared_code} END
                       IGNORE NULLS) OVER (
               PARTITION BY cell_key ORDER BY observed_at, run_id
               ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS after
    FROM sides
),
chosen AS (
    SELECT * EXCLUDE (before, after),
           CASE WHEN after IS NULL
                     OR (before IS NOT NULL
                         AND observed_at - before.at <= after.at - observed_at)
                THEN before ELSE after END AS b
    FROM nearest
)
SELECT
    n.cell_key,
    hash(n.cell_key, n.implementation_digest, n.label) AS series_key,
    n.kernel, n.pass, n.gpu, n.form_factor, n.environment, n.shape, n.dtype, n.axes,
    n.metric, n.statistic, n.unit,
    n.label AS provider, n.implementation, n.implementation_digest,
    n.version, n.observed_at, n.run_id,
    n.value_ns, n.p20 * kindex_time_unit_ns(n.unit) AS p20_ns,
    n.p80 * kindex_time_unit_ns(n.unit) AS p80_ns,
    n.baseline_rule IS NOT NULL AS is_baseline,
    n.baseline, n.cell_baseline_rule AS baseline_rule,
    n.b.run AS baseline_run_id, n.b.ns AS baseline_ns, n.b.at AS baseline_observed_at,
    n.b.digest AS baseline_digest,
    CASE WHEN n.baseline_rule IS NULL
              AND (n.b.code = n.declared_code
                   OR (n.b.code IS NULL AND n.declared_code IS NULL
                       AND abs(epoch(n.b.at) - epoch(n.observed_at))
                           <= kindex_invocation_gap_seconds()))
         THEN n.b.ns END AS invocation_baseline_ns,
    n.code_key, n.declared_code,
    CASE WHEN n.baseline_rule IS NULL THEN n.b.ns / n.value_ns END AS speedup,
    pv.git_commit,
    coalesce(pv.on_main, true) AS on_main,
    n.source, n.workload_digest, n.environment_digest, n.protocol_digest
FROM chosen n
LEFT JOIN (SELECT run_id, any_value(git_commit) AS git_commit, bool_or(on_main) AS on_main
           FROM run_provenance GROUP BY run_id) pv USING (run_id);

CREATE OR REPLACE VIEW history_runs AS
SELECT * FROM history_runs_for(NULL, NULL, NULL);

-- The points of each history series: a series is one cell and implementation (series_key);
-- its points are the code it measured (code_key, sql/views/noise.sql run_code_for: one version
-- label and one declared code, git commit or invocation). Runs of the same code are pooled
-- into one point, their spread kept, never a step. Main-branch runs, or every run with
-- all_branches. What a point holds depends only on its series' runs (its noise reads the
-- floors at read time, history_points.sql), so the lake stores them per environment
-- (layer_points, kindex_olap.layers), with each series' change points; run_ids lets
-- `kindex check` find the points its new runs fall in. Where a column may differ between a
-- point's runs, the newest run's (then the largest run id) is taken, and sums run in run id
-- order: the same rows, to the last bit, however the runs were ingested (a parallel sum's
-- order varies).
CREATE OR REPLACE MACRO history_point_rows_for(
    environment_filter, all_branches, kernel_filter := NULL) AS TABLE
SELECT
    series_key, code_key AS point_key, code_key,
    any_value(cell_key) AS cell_key,
    any_value(workload_digest) AS workload_digest, any_value(protocol_digest) AS protocol_digest,
    any_value(implementation_digest) AS implementation_digest, any_value(unit) AS unit,
    any_value(kernel) AS kernel, any_value(pass) AS pass, any_value(gpu) AS gpu,
    any_value(form_factor) AS form_factor, any_value(environment) AS environment,
    any_value(shape) AS shape, any_value(dtype) AS dtype, any_value(axes) AS axes,
    any_value(metric) AS metric, any_value(environment_digest) AS environment_digest,
    any_value(statistic) AS statistic, any_value(provider) AS provider,
    any_value(implementation) AS implementation, any_value(baseline) AS baseline,
    any_value(baseline_rule) AS baseline_rule, bool_or(is_baseline) AS is_baseline,
    any_value(version) AS version,
    max({'at': observed_at, 'run': run_id}).run AS run_id,
    count(*) AS runs,
    median(value_ns) AS median_ns, median(p20_ns) AS p20_ns, median(p80_ns) AS p80_ns,
    min(value_ns) AS min_ns, max(value_ns) AS max_ns,
    avg(ln(value_ns) ORDER BY run_id) AS log_mean,
    stddev_samp(ln(value_ns) ORDER BY run_id) AS log_sd,
    median(baseline_ns) AS baseline_ns, min(baseline_ns) AS baseline_min_ns,
    median(invocation_baseline_ns) AS invocation_baseline_ns,
    min(baseline_digest) AS baseline_digest,
    count(DISTINCT baseline_digest) AS baseline_digests,
    any_value(declared_code) AS declared_code,
    max(baseline_ns) AS baseline_max_ns,
    avg(ln(baseline_ns) ORDER BY run_id) AS baseline_log_mean,
    count(speedup) AS speedup_runs,
    median(speedup) AS speedup, min(speedup) AS speedup_min, max(speedup) AS speedup_max,
    avg(ln(speedup) ORDER BY run_id) AS speedup_log_mean,
    stddev_samp(ln(speedup) ORDER BY run_id) AS speedup_log_sd,
    min(observed_at) AS first_observed, max(observed_at) AS last_observed,
    max({'at': observed_at, 'run': run_id, 'baseline_at': baseline_observed_at}).baseline_at
        AS baseline_observed_at,
    string_agg(DISTINCT left(git_commit, 10), ' ' ORDER BY left(git_commit, 10)) AS commits,
    list(run_id ORDER BY run_id) AS run_ids
FROM history_runs_for(kernel_filter, environment_filter, NULL)
WHERE all_branches OR on_main
GROUP BY series_key, code_key;

-- The stored points of the lake commit (layer_points, main-branch runs) as
-- history_point_rows_for returns them, with each series' change points in version order
-- (cp_*: the p-value of the change point that starts at this point; quiet_*: on a series'
-- first point, the p-value of the strongest split of a series tested without finding one).
-- The keys are hashed here, not stored: Delta has no unsigned integer.
CREATE OR REPLACE MACRO stored_history_points() AS TABLE
SELECT hash(cell_key, implementation_digest, provider) AS series_key, *
FROM (SELECT hash(kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
                  statistic, unit) AS cell_key, *
      FROM layer_points);
