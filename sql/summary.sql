-- The summary verb's query. kindex_olap.query.compile puts the speedups rows the summary
-- aggregates in place of the braced word `cases` below (a fixed SELECT over speedups_for with
-- its filters as bound parameters; never user text).
--
-- Per kernel x pass x GPU environment x metric x statistic x baseline x candidate: the geometric
-- mean over shapes, and an interval from a seeded Poisson bootstrap that resamples shapes (each
-- shape drawn a Poisson(1) number of times per resample, sql/noise.sql: the usual
-- columnar stand-in for drawing n shapes with replacement): geomean_lo is the 2.5th percentile of
-- the resampled geometric means of the shapes' widened lower bounds (speedup_lo), geomean_hi the
-- 97.5th of their upper bounds, so the interval holds both the spread over shapes and the
-- run-to-run noise of each (taken as shared by every shape of a run: conservative). The verdict
-- reads that interval. Logs are summed as fixed-point integers (1e-9) so that the result does not
-- depend on the order of the rows: two runs of one query give identical answers.
WITH
cases AS (
    SELECT *,
           row_number() OVER (
               PARTITION BY kernel, pass, environment_digest, metric, statistic, baseline,
                            candidate
               ORDER BY workload_digest, protocol_digest, candidate_run_id, baseline_run_id)
               AS case_index,
           round(ln(speedup_lo) * 1e9)::BIGINT AS fixed_log_lo,
           round(ln(speedup_hi) * 1e9)::BIGINT AS fixed_log_hi
    FROM ({cases}) AS selected
),
draws AS (
    SELECT * EXCLUDE (u), kindex_poisson_draw(u) AS w
    FROM (
        SELECT kernel, pass, environment_digest, metric, statistic, baseline, candidate, r.b,
               kindex_bootstrap_uniform(r.b, c.case_index) AS u, c.fixed_log_lo, c.fixed_log_hi
        FROM cases c CROSS JOIN range(1, kindex_bootstrap_resamples() + 1) AS r(b)
    )
),
resamples AS (
    SELECT kernel, pass, environment_digest, metric, statistic, baseline, candidate, b,
           sum(w * fixed_log_lo) / sum(w) / 1e9 AS log_lo,
           sum(w * fixed_log_hi) / sum(w) / 1e9 AS log_hi
    FROM draws
    WHERE w > 0
    GROUP BY kernel, pass, environment_digest, metric, statistic, baseline, candidate, b
),
intervals AS (
    SELECT kernel, pass, environment_digest, metric, statistic, baseline, candidate,
           exp(quantile_cont(log_lo, 0.025)) AS geomean_lo,
           exp(quantile_cont(log_hi, 0.975)) AS geomean_hi
    FROM resamples
    GROUP BY kernel, pass, environment_digest, metric, statistic, baseline, candidate
),
groups AS (
    SELECT kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
           baseline, candidate,
           string_agg(DISTINCT baseline_rule, ', ' ORDER BY baseline_rule) AS baseline_rule,
           count(*) AS cases,
           exp(sum(round(ln(speedup) * 1e9)::BIGINT) / count(*) / 1e9) AS geomean_speedup,
           min(speedup) AS min_speedup,
           max(speedup) AS max_speedup,
           avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
           count(*) FILTER (WHERE verdict = 'within noise') AS within_noise,
           count(*) FILTER (WHERE evidence LIKE 'single timing%') AS single_timings
    FROM cases
    GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
             baseline, candidate
)
SELECT g.*, i.geomean_lo, i.geomean_hi, kindex_verdict(i.geomean_lo, i.geomean_hi) AS verdict
FROM groups g
LEFT JOIN intervals i
  ON  i.kernel IS NOT DISTINCT FROM g.kernel AND i.pass IS NOT DISTINCT FROM g.pass
  AND i.environment_digest = g.environment_digest AND i.metric = g.metric
  AND i.statistic IS NOT DISTINCT FROM g.statistic AND i.baseline = g.baseline
  AND i.candidate = g.candidate
