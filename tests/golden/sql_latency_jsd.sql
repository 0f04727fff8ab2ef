SELECT kernel, coalesce(pass, 'unspecified') AS pass, gpu, form_factor, environment,
    shape, provider, implementation,
    median_ns / 1e6 AS median_ms, p20_ns / 1e6 AS p20_ms, p80_ns / 1e6 AS p80_ms,
    version, observed_at, status, axes
FROM latency_for(?, ?, ?)
WHERE (provider = ? OR starts_with(provider, ?) OR starts_with(provider, ?))
ORDER BY kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, provider, implementation, observed_at
-- parameters: [["jsd"], ["sha256:ad459e643ef802f7008f1fa8915785c905d05abbfdb5eb0328be214f8d9f3a8b"], null, "liger", "liger_", "liger-"]
