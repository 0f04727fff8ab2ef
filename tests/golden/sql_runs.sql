SELECT run_id, kernel, coalesce(pass, 'unspecified') AS pass, provider,
    gpu, form_factor, environment, shape,
    metric, statistic, value, unit, version, observed_at, status
FROM observations_for(?, ?, ?)
ORDER BY kernel, pass, gpu, environment, shape, provider, metric, observed_at, run_id
-- parameters: [["jsd"], null, null]
