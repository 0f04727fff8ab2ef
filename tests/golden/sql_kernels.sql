SELECT kernel, operation_family, count(*) AS runs,
    string_agg(DISTINCT coalesce(pass, 'unspecified'), ', '
               ORDER BY coalesce(pass, 'unspecified')) AS passes,
    string_agg(DISTINCT provider, ', ' ORDER BY provider) AS providers,
    count(DISTINCT environment_digest) AS environments
FROM observations_for(?, ?, ?)
GROUP BY kernel, operation_family
ORDER BY kernel
-- parameters: [null, null, null]
