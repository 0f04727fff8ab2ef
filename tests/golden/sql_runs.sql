SELECT run_id, kernel, coalesce(pass, 'unspecified') AS pass, provider, implementation,
    gpu, form_factor, environment, shape,
    metric, statistic, value, unit, version, observed_at, status, axes
FROM observations_for(?, ?, ?)
ORDER BY kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, provider, implementation, metric, observed_at, run_id
-- parameters: [["jsd"], null, null]
