-- History: every passed run of a time metric (latency, GPU MODE's score, ...), one row per run,
-- with the speedup against its cell's baseline run nearest in time. Defined with the views
-- (kindex_olap.query.engine); kindex_olap.query.history reads history_runs_for with the same
-- kernel / environment / pass filters as the other verbs, then sql/history_points.sql.
--
-- A cell is what views.sql pairs within: kernel, pass, workload, environment, protocol, metric,
-- statistic and unit (cell_key). Its baseline is chosen as in views.sql: the reference
-- implementation (kindex_reference_rank), else the implementation whose newest passed run is
-- fastest. Each run is paired with the baseline run closest to it in time, before or after
-- (Liger writes both sides of one benchmark invocation seconds apart), so a step that the
-- baseline made too shows as a steady speedup: something on the machine moved, not the code.

CREATE OR REPLACE MACRO history_runs_for(kernel_filter, environment_filter, pass_filter)
AS TABLE
WITH
passed AS (
    SELECT *,
           concat_ws('|', kernel, coalesce(pass, ''), workload_digest, environment_digest,
                     protocol_digest, metric, coalesce(statistic, ''), coalesce(unit, ''))
               AS cell_key,
           value * kindex_time_unit_ns(unit) AS value_ns
    FROM observed_values_for(kernel_filter, environment_filter, pass_filter, NULL,
                             unit_filter := kindex_time_units())
    WHERE status = 'passed' AND value > 0
),
newest AS (
    SELECT cell_key, implementation_digest, any_value(provider) AS provider,
           first(value ORDER BY observed_at DESC, run_id) AS value
    FROM passed GROUP BY cell_key, implementation_digest
),
cell AS (
    SELECT cell_key,
           arg_min(provider, (kindex_reference_rank(provider), provider))
               FILTER (WHERE kindex_reference_rank(provider) IS NOT NULL) AS reference_provider,
           arg_min(implementation_digest, (value, implementation_digest)) AS fastest_implementation
    FROM newest GROUP BY cell_key
),
sides AS (
    SELECT p.*,
           CASE WHEN p.provider = c.reference_provider THEN 'reference'
                WHEN c.reference_provider IS NULL
                     AND p.implementation_digest = c.fastest_implementation THEN 'fastest'
           END AS baseline_rule
    FROM passed p JOIN cell c USING (cell_key)
),
base AS (
    SELECT cell_key, observed_at, run_id, value_ns, provider, version, baseline_rule
    FROM sides WHERE baseline_rule IS NOT NULL
),
before AS (
    SELECT s.run_id, b.observed_at AS b_at, b.run_id AS b_run, b.value_ns AS b_ns,
           b.provider AS b_provider, b.baseline_rule AS b_rule
    FROM sides s ASOF LEFT JOIN base b
      ON s.cell_key = b.cell_key AND s.observed_at >= b.observed_at
),
after AS (
    SELECT s.run_id, b.observed_at AS a_at, b.run_id AS a_run, b.value_ns AS a_ns,
           b.provider AS a_provider, b.baseline_rule AS a_rule
    FROM sides s ASOF LEFT JOIN base b
      ON s.cell_key = b.cell_key AND s.observed_at <= b.observed_at
),
nearest AS (
    SELECT s.*,
           b_at IS NOT NULL AND (a_at IS NULL OR s.observed_at - b_at <= a_at - s.observed_at)
               AS use_before,
           CASE WHEN use_before THEN b_run ELSE a_run END AS baseline_run_id,
           CASE WHEN use_before THEN b_ns ELSE a_ns END AS baseline_ns,
           CASE WHEN use_before THEN b_at ELSE a_at END AS baseline_observed_at,
           coalesce(b_provider, a_provider) AS baseline,
           coalesce(b_rule, a_rule) AS cell_baseline_rule
    FROM sides s JOIN before USING (run_id) JOIN after USING (run_id)
)
SELECT
    n.cell_key,
    concat_ws('|', n.cell_key, n.implementation_digest, n.run_provider) AS series_key,
    n.kernel, n.pass, n.gpu, n.form_factor, n.environment, n.shape, n.dtype, n.axes,
    n.metric, n.statistic, n.unit,
    coalesce(n.run_provider, n.provider) AS provider, n.implementation, n.implementation_digest,
    n.version, n.observed_at, n.run_id,
    n.value_ns, n.p20 * kindex_time_unit_ns(n.unit) AS p20_ns,
    n.p80 * kindex_time_unit_ns(n.unit) AS p80_ns,
    n.baseline_rule IS NOT NULL AS is_baseline,
    n.baseline, n.cell_baseline_rule AS baseline_rule,
    n.baseline_run_id, n.baseline_ns, n.baseline_observed_at,
    CASE WHEN n.baseline_rule IS NULL THEN n.baseline_ns / n.value_ns END AS speedup,
    pv.commit AS commit,
    coalesce(pv.on_main, true) AS on_main,
    n.source, n.workload_digest, n.environment_digest, n.protocol_digest
FROM nearest n
LEFT JOIN (SELECT run_id, any_value(commit) AS commit, bool_or(on_main) AS on_main
           FROM run_provenance GROUP BY run_id) pv USING (run_id);

CREATE OR REPLACE VIEW history_runs AS
SELECT * FROM history_runs_for(NULL, NULL, NULL);
