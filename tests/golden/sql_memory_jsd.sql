SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment, shape,
    candidate, baseline, candidate_name, baseline_name, baseline_rule,
    memory_ratio, ratio_lo, ratio_hi, verdict,
    candidate_bytes / 1048576 AS candidate_mib, baseline_bytes / 1048576 AS baseline_mib,
    candidate_version, baseline_version,
    candidate_observed_at, baseline_observed_at, axes
FROM memory_ratios_for(?, ?, ?)
WHERE baseline_rule IS NOT NULL
  AND pairing = 'latest'
ORDER BY kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, candidate, baseline, candidate_observed_at
-- parameters: [["jsd"], null, ["forward"]]
