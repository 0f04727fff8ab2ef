SELECT gpu, form_factor, gpu_arch, environment, count(*) AS runs,
    count(DISTINCT kernel) AS kernels, min(observed_at) AS first_observed,
    max(observed_at) AS last_observed
FROM observations_for(?, ?, ?)
GROUP BY gpu, form_factor, gpu_arch, environment
ORDER BY gpu, form_factor, environment
-- parameters: [null, null, null]
