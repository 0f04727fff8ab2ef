-- A query template of `kindex report` (kindex_olap.doors.report runs it on a connection with the
-- views): what the lake holds, one row per source (Liger CSV, a KernelIndex export's sources):
-- runs, kernels, GPUs (environments), versions and the observed period.
SELECT coalesce(r.source, '(none)') AS source,
       count(*) AS runs,
       count(DISTINCT r.kernel) AS kernels,
       count(DISTINCT r.environment_digest) AS environments,
       string_agg(DISTINCT e.product, ', ' ORDER BY e.product) AS gpus,
       count(DISTINCT r.version) AS versions,
       min(r.observed_at) AS first_observed,
       max(r.observed_at) AS last_observed
FROM runs r
LEFT JOIN (SELECT environment_digest, any_value(product) AS product FROM environments GROUP BY ALL) e
    USING (environment_digest)
GROUP BY ALL
ORDER BY runs DESC, source
