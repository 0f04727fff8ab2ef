SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment,
    metric, statistic, baseline, candidate, baseline_name, candidate_name, baseline_rule,
    cases, geomean_speedup, geomean_lo, geomean_hi, verdict,
    min_speedup, max_speedup, share_faster, within_noise, single_timings
FROM (
WITH
cases AS (
    SELECT * FROM (SELECT *
FROM speedups_for(?, ?, ?)
WHERE baseline_rule IS NOT NULL
  AND pairing = 'latest') AS selected
),
gathered AS (
    SELECT kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
           baseline, candidate, baseline_name, candidate_name,
           bool_and(baseline_is_reference) AS baseline_is_reference,
           string_agg(DISTINCT baseline_rule, ', ' ORDER BY baseline_rule) AS baseline_rule,
           count(*) AS cases,
           min(speedup) AS min_speedup,
           max(speedup) AS max_speedup,
           avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
           count(*) FILTER (WHERE verdict = 'within noise') AS within_noise,
           count(*) FILTER (WHERE evidence LIKE 'single timing%') AS single_timings,
           list({'log': ln(speedup), 'lo': ln(speedup_lo), 'hi': ln(speedup_hi)}
                ORDER BY candidate_run_id, baseline_run_id) AS logs
    FROM cases
    GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
             baseline, candidate, baseline_name, candidate_name
),
groups AS (
    SELECT * EXCLUDE (logs),
           exp(list_avg(list_transform(logs, lambda x: x.log))) AS geomean_speedup,
           list_transform(logs, lambda x: x.lo) AS log_lo,
           list_transform(logs, lambda x: x.hi) AS log_hi
    FROM gathered
),
draws AS (
    SELECT b, list(kindex_poisson_draw(kindex_bootstrap_uniform(b, i))::DOUBLE ORDER BY i) AS ws
    FROM range(1, kindex_bootstrap_resamples() + 1) AS r(b)
    CROSS JOIN (SELECT unnest(range(1, max(cases) + 1)) AS i FROM groups) AS shapes
    GROUP BY b
),
weights AS (
    SELECT n, b, list_transform(ws, lambda w: w / total) AS ws
    FROM (
        SELECT n, b, ws[1:n] AS ws, list_sum(ws[1:n]) AS total
        FROM (SELECT DISTINCT cases AS n FROM groups) AS sizes CROSS JOIN draws
    ) AS sliced
    WHERE total > 0
),
numbered AS (
    SELECT *, row_number() OVER () AS group_id FROM groups
),
resampled AS (
    SELECT g.group_id,
           list_dot_product(g.log_lo, w.ws) AS log_lo,
           list_dot_product(g.log_hi, w.ws) AS log_hi
    FROM numbered g JOIN weights w ON w.n = g.cases
),
bounds AS (
    SELECT group_id,
           exp(min(log_lo, ceil(0.025 * kindex_bootstrap_resamples())::BIGINT)
               [greatest(1, ceil(0.025 * count(*)))::BIGINT]) AS geomean_lo,
           exp(max(log_hi, ceil(0.025 * kindex_bootstrap_resamples())::BIGINT)
               [greatest(1, ceil(0.025 * count(*)))::BIGINT]) AS geomean_hi
    FROM resampled
    GROUP BY group_id
)
SELECT g.* EXCLUDE (log_lo, log_hi, group_id), b.geomean_lo, b.geomean_hi,
       kindex_verdict(b.geomean_lo, b.geomean_hi) AS verdict
FROM numbered g JOIN bounds b USING (group_id))
ORDER BY kernel, kindex_pass_order(pass), pass, gpu, environment, metric, statistic, baseline, candidate, baseline_name, candidate_name
-- parameters: [["jsd"], null, null]
