SELECT kernel, pass, gpu, form_factor, environment, baseline, candidate,
    count(*) AS cases, geomean(speedup) AS geomean_speedup,
    min(speedup) AS min_speedup, max(speedup) AS max_speedup,
    avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
    count(*) FILTER (WHERE verdict = 'within noise') AS within_noise
FROM speedups_for(?, ?, ?)
WHERE candidate = ?
  AND baseline_is_reference
  AND pairing = 'latest'
GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, baseline, candidate
ORDER BY kernel, pass, gpu, environment, baseline, candidate
-- parameters: [["jsd"], null, null, "liger"]
