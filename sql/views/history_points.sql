-- The points of each history series with their noise and order, read from the temporary table
-- history_selected that kindex_olap.query.history fills with the points of every series
-- (history_point_rows_for in sql/views/history.sql, or the lake commit's layer_points) and the
-- query's filters (in_query marks the points they select; `kindex check` keeps every series so
-- that its multiple-comparison correction covers the whole lake). Defined once per connection,
-- after that table exists; DuckDB binds a macro's tables when it is called.
--
-- by_run = false orders a series' points by version (version_order: the labels in PEP 440
-- order, labels that do not parse by first appearance), then by time; by_run = true by time.
-- point_index numbers the points in order. shown_only: only the series that hold a point the
-- query selects or a new run (what the answers show).
-- Each point's noise is the noise model's (sql/views/noise.sql, issue 17), as a log half-width that
-- holds 95 % of repeats: kindex_side_noise, i.e. with one run its share of the class floor of
-- its environment (floor_source says whether replicates, the pooled class or the documented
-- default set it), with two or more their spread around the point's median but not less than
-- the floor's share for that many runs. A speedup point of one run carries both sides' noise
-- (kindex_pair_noise); of several, its speedups' spread, bounded below the same way.

CREATE OR REPLACE MACRO history_points(version_order, by_run, shown_only) AS TABLE
WITH
p AS (
    SELECT *, coalesce(list_position(version_order, version), 0) AS version_rank
    FROM history_selected
    WHERE NOT shown_only
       OR series_key IN (SELECT series_key FROM history_selected WHERE in_query OR is_new)
),
noisy AS (
    SELECT p.*,
           kindex_latency_class_rank(p.median_ns) AS class_rank,
           f.sources[kindex_latency_class_rank(p.median_ns)] AS floor_source,
           f.log_floors[kindex_latency_class_rank(p.median_ns)] AS log_floor,
           kindex_side_noise(p.median_ns, p.runs, p.min_ns, p.max_ns,
                             f.log_floors[kindex_latency_class_rank(p.median_ns)]) AS noise,
           -- several speedups: their spread, never less than one pair's floor noise
           -- (kindex_pair_noise of both sides' shares) for that many pairs
           CASE WHEN p.speedup_runs >= 2
                THEN greatest(ln(p.speedup_max / p.speedup), ln(p.speedup / p.speedup_min),
                              ln(1 + kindex_noise_min_floor()) / sqrt(2),
                              kindex_pair_noise(
                                  f.log_floors[kindex_latency_class_rank(p.median_ns)],
                                  f.log_floors[kindex_latency_class_rank(p.baseline_ns)])
                              / sqrt(2 * p.speedup_runs))
                ELSE kindex_pair_noise(
                    kindex_side_noise(p.median_ns, 1, p.median_ns, p.median_ns,
                                      f.log_floors[kindex_latency_class_rank(p.median_ns)]),
                    kindex_side_noise(p.baseline_ns, 1, p.baseline_ns, p.baseline_ns,
                                      f.log_floors[kindex_latency_class_rank(p.baseline_ns)]))
           END AS speedup_noise,
           f.sources[kindex_latency_class_rank(p.baseline_ns)] AS baseline_floor_source
    FROM p LEFT JOIN noise_floors f USING (environment_digest)
)
SELECT
    *,
    row_number() OVER (
        PARTITION BY series_key
        ORDER BY CASE WHEN by_run THEN NULL ELSE version_rank END, first_observed, point_key
    ) AS point_index
FROM noisy
ORDER BY series_key, point_index;

-- Leaderboards (cells without a reference implementation, baseline_rule 'fastest': GPU MODE
-- KernelBot, FlashInfer-Bench): the record staircase, every run that beat the best value of
-- its cell (leaderboard problem, GPU, metric and statistic) before it, in time order. Reads
-- the runs of history_record_runs (kindex_olap.query.history fills it like history_selected,
-- run by run).
CREATE OR REPLACE MACRO history_records() AS TABLE
WITH ordered AS (
    SELECT *,
           min(value_ns) OVER (
               PARTITION BY cell_key ORDER BY observed_at, run_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_best_ns
    FROM history_record_runs
    WHERE in_query AND baseline_rule = 'fastest'
)
SELECT
    kernel, coalesce(pass, 'unspecified') AS pass, kindex_gpu_label(gpu, form_factor) AS gpu,
    shape, metric, statistic, provider AS implementation, version, observed_at,
    value_ns / 1e6 AS value_ms, previous_best_ns / 1e6 AS previous_best_ms,
    previous_best_ns / value_ns AS improvement,
    row_number() OVER (PARTITION BY cell_key ORDER BY observed_at, run_id) AS record,
    left(git_commit, 10) AS git_commit, run_id,
    -- a provider's implementations (a user's submissions, FlashInfer's GEMMs) by their names
    implementation AS implementation_name,
    -- a shape label two workloads share (amd-fp8-mm's "[1024, 7168]", n apart) is told apart
    -- by the axes (kindex_olap.doors.apart), and each workload's records kept together
    axes
FROM ordered
WHERE previous_best_ns IS NULL OR value_ns < previous_best_ns
ORDER BY kernel, pass, gpu, shape, workload_digest, metric, statistic, observed_at, run_id;
