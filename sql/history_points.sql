-- The points of each history series, read from the temporary table history_selected that
-- kindex_olap.query.history fills from history_runs_for (sql/history.sql) with the query's
-- filters (in_query marks the runs they select; `kindex check` keeps every series so that its
-- multiple-comparison correction covers the whole lake). Defined once per connection, after
-- that table exists; DuckDB binds a macro's tables when it is called.
--
-- A series is one cell and implementation (series_key). Its points are its versions
-- (by_run = false: the runs of a version pooled, their spread kept, so a transient shows) or
-- its runs (by_run = true). version_order lists the version labels in PEP 440 order (versions
-- that do not parse: by first appearance); point_index numbers the points in order.
-- Log-scale means and sample standard deviations feed the step tests: run-to-run noise is
-- multiplicative (a ratio), so it is additive on log(value).

CREATE OR REPLACE MACRO history_points(version_order, by_run) AS TABLE
WITH
r AS (
    SELECT *,
           coalesce(list_position(version_order, version), 0) AS version_rank,
           CASE WHEN by_run THEN run_id ELSE coalesce(version, '') END AS point_key
    FROM history_selected
),
p AS (
    SELECT
        series_key, point_key,
        any_value(cell_key) AS cell_key,
        any_value(kernel) AS kernel, any_value(pass) AS pass, any_value(gpu) AS gpu,
        any_value(form_factor) AS form_factor, any_value(environment) AS environment,
        any_value(shape) AS shape, any_value(metric) AS metric,
        any_value(statistic) AS statistic, any_value(provider) AS provider,
        any_value(implementation) AS implementation, any_value(baseline) AS baseline,
        any_value(baseline_rule) AS baseline_rule, bool_or(is_baseline) AS is_baseline,
        any_value(version) AS version, min(version_rank) AS version_rank,
        any_value(run_id) AS run_id,
        count(*) AS runs,
        median(value_ns) AS median_ns, median(p20_ns) AS p20_ns, median(p80_ns) AS p80_ns,
        min(value_ns) AS min_ns, max(value_ns) AS max_ns,
        avg(ln(value_ns)) AS log_mean, stddev_samp(ln(value_ns)) AS log_sd,
        median(baseline_ns) AS baseline_ns,
        avg(ln(baseline_ns)) AS baseline_log_mean,
        count(speedup) AS speedup_runs,
        median(speedup) AS speedup,
        avg(ln(speedup)) AS speedup_log_mean, stddev_samp(ln(speedup)) AS speedup_log_sd,
        min(observed_at) AS first_observed, max(observed_at) AS last_observed,
        any_value(baseline_observed_at) AS baseline_observed_at,
        string_agg(DISTINCT left("commit", 10), ' ' ORDER BY left("commit", 10)) AS commits,
        bool_or(in_query) AS in_query
    FROM r
    GROUP BY series_key, point_key
)
SELECT
    *,
    row_number() OVER (
        PARTITION BY series_key
        ORDER BY CASE WHEN by_run THEN NULL ELSE version_rank END, first_observed, point_key
    ) AS point_index
FROM p
ORDER BY series_key, point_index;
