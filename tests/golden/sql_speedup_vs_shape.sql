SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment, shape,
    metric, statistic, candidate, baseline, candidate_name, baseline_name, baseline_rule,
    speedup, speedup_lo, speedup_hi, verdict, evidence,
    candidate_ns / 1e6 AS candidate_ms, baseline_ns / 1e6 AS baseline_ms,
    candidate_version, baseline_version,
    candidate_observed_at, baseline_observed_at,
    run_speedup_lo, run_speedup_hi, noise, noise_source,
    candidate_runs, baseline_runs, candidate_samples, baseline_samples, axes
FROM speedups_for(?, ?, ?)
WHERE axes[?] >= ?
  AND dtype = ?
  AND (candidate = ? OR starts_with(candidate, ?) OR starts_with(candidate, ?))
  AND baseline = ?
  AND pairing = 'latest'
ORDER BY kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, candidate, baseline, candidate_observed_at
-- parameters: [["jsd"], ["sha256:ad459e643ef802f7008f1fa8915785c905d05abbfdb5eb0328be214f8d9f3a8b"], ["backward"], "tokens", 4096.0, "fp32", "torch", "torch_", "torch-", "liger"]
