-- History: every passed run of a time metric (latency, GPU MODE's score, ...), one row per run,
-- with the speedup against its cell's baseline run nearest in time. Defined with the views
-- (kindex_olap.query.engine); kindex_olap.query.history reads history_runs_for with the same
-- kernel / environment / pass filters as the other verbs, then sql/views/history_points.sql.
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
           -- a 64-bit hash of the cell's keys: grouping and sorting by the concatenated text
           -- (five digests) cost several times more at 300k runs; collisions are negligible
           hash(kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
                statistic, unit) AS cell_key,
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
           arg_min(implementation_digest, (value, implementation_digest)) AS fastest_implementation,
           arg_min(provider, (value, implementation_digest)) AS fastest_provider
    FROM newest GROUP BY cell_key
),
sides AS (
    SELECT p.*,
           CASE WHEN p.provider = c.reference_provider THEN 'reference'
                WHEN c.reference_provider IS NULL
                     AND p.implementation_digest = c.fastest_implementation THEN 'fastest'
           END AS baseline_rule,
           coalesce(c.reference_provider, c.fastest_provider) AS baseline,
           CASE WHEN c.reference_provider IS NULL THEN 'fastest' ELSE 'reference' END
               AS cell_baseline_rule
    FROM passed p JOIN cell c USING (cell_key)
),
-- The baseline run nearest in time: the cell's runs in time order, the last baseline run at or
-- before each run and the first at or after it (one sort per cell; two ASOF joins and the
-- joins back by run id cost three times as much at 300k runs).
nearest AS (
    SELECT *,
           last_value(CASE WHEN baseline_rule IS NOT NULL
                           THEN {'at': observed_at, 'ns': value_ns, 'run': run_id} END
                      IGNORE NULLS) OVER (
               PARTITION BY cell_key ORDER BY observed_at, run_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS before,
           first_value(CASE WHEN baseline_rule IS NOT NULL
                            THEN {'at': observed_at, 'ns': value_ns, 'run': run_id} END
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
    hash(n.cell_key, n.implementation_digest, n.run_provider) AS series_key,
    n.kernel, n.pass, n.gpu, n.form_factor, n.environment, n.shape, n.dtype, n.axes,
    n.metric, n.statistic, n.unit,
    coalesce(n.run_provider, n.provider) AS provider, n.implementation, n.implementation_digest,
    n.version, n.observed_at, n.run_id,
    n.value_ns, n.p20 * kindex_time_unit_ns(n.unit) AS p20_ns,
    n.p80 * kindex_time_unit_ns(n.unit) AS p80_ns,
    n.baseline_rule IS NOT NULL AS is_baseline,
    n.baseline, n.cell_baseline_rule AS baseline_rule,
    n.b.run AS baseline_run_id, n.b.ns AS baseline_ns, n.b.at AS baseline_observed_at,
    CASE WHEN n.baseline_rule IS NULL THEN n.b.ns / n.value_ns END AS speedup,
    pv.git_commit,
    coalesce(pv.on_main, true) AS on_main,
    n.source, n.workload_digest, n.environment_digest, n.protocol_digest
FROM chosen n
LEFT JOIN (SELECT run_id, any_value(git_commit) AS git_commit, bool_or(on_main) AS on_main
           FROM run_provenance GROUP BY run_id) pv USING (run_id);

CREATE OR REPLACE VIEW history_runs AS
SELECT * FROM history_runs_for(NULL, NULL, NULL);
