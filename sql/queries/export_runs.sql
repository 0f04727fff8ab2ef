-- `kindex export`'s runs: every run, whatever its metric and status, with the columns of the
-- view observed_values (its central value and p20/p80). observed_values keeps the runs that have
-- a metric, the input of the pairs; a run that failed to compile or run has none (the
-- KernelIndex export holds 86 such runs), and the export promises every run.
SELECT * FROM observed_values
UNION ALL
SELECT * EXCLUDE (unit, value, latency_p20_ns, latency_p80_ns), unit, value, NULL AS p20,
       NULL AS p80
FROM observations_wide_for(NULL, NULL, NULL)
WHERE metric IS NULL
