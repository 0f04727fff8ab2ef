SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment,
    metric, statistic, baseline, candidate,
    string_agg(DISTINCT baseline_rule, ', ' ORDER BY baseline_rule) AS baseline_rule,
    count(*) AS cases, geomean(speedup) AS geomean_speedup,
    min(speedup) AS min_speedup, max(speedup) AS max_speedup,
    avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
    count(*) FILTER (WHERE verdict = 'within noise') AS within_noise
FROM speedups_for(?, ?, ?)
WHERE default_candidate
  AND baseline_rule IS NOT NULL
  AND pairing = 'latest'
GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, metric,
    statistic, baseline, candidate
ORDER BY kernel, pass, gpu, environment, metric, statistic, baseline, candidate
-- parameters: [["jsd"], null, null]
