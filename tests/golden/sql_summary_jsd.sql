SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment,
    metric, statistic, baseline, candidate, baseline_rule,
    cases, geomean_speedup, geomean_lo, geomean_hi, verdict,
    min_speedup, max_speedup, share_faster, within_noise, single_timings
FROM (
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
    FROM (SELECT *
FROM speedups_for(?, ?, ?)
WHERE default_candidate
  AND baseline_rule IS NOT NULL
  AND pairing = 'latest') AS selected
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
  AND i.candidate = g.candidate)
ORDER BY kernel, pass, gpu, environment, metric, statistic, baseline, candidate
-- parameters: [["jsd"], null, null]
