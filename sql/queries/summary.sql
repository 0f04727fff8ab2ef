-- A query template: the summary verb's query. kindex_olap.query.compile reads it (VerbSql
-- template) and puts the speedups rows the summary aggregates in place of the braced word
-- `cases` below (a fixed SELECT over speedups_for with its filters as bound parameters; never
-- user text).
--
-- Per kernel x pass x GPU environment x metric x statistic x baseline x candidate (each side one
-- implementation: a leaderboard user's submissions are summarized apart, not pooled as if each
-- were more shapes): the geometric mean over shapes, and an interval from a seeded Poisson bootstrap that resamples shapes: in
-- resample b, shape i counts kindex_poisson_draw(kindex_bootstrap_uniform(b, i)) times (the
-- usual columnar stand-in for drawing n shapes with replacement; resamples that draw no shape
-- are left out). geomean_lo is the 2.5th percentile (the k-th smallest of m resamples,
-- k = ceil(0.025 m)) of the resampled geometric means of the shapes' widened lower bounds
-- (speedup_lo), geomean_hi the 97.5th (the k-th largest) of their upper bounds: the interval holds the spread over shapes and each shape's run-to-run noise (taken as
-- shared by the shapes of a run: conservative). The verdict reads it.
-- The weights are one list per resample and group size, shared by every group of that size, and
-- a group's resampled means are dot products with its list of shapes (list_dot_product): one row
-- per group and resample, none per resample and shape.
-- Shapes are ordered by their run ids and sums taken in that order: two runs give identical
-- answers.
WITH
cases AS (
    SELECT * FROM ({cases}) AS selected
),
-- One ordered list of each group's log speedups and bounds (run ids order the shapes: unique
-- within a group, and cheaper to sort on than the workload digests).
gathered AS (
    SELECT kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
           baseline, candidate, baseline_name, candidate_name,
           bool_and(baseline_is_reference) AS baseline_is_reference,
           string_agg(DISTINCT baseline_rule, ', ' ORDER BY baseline_rule) AS baseline_rule,
           count(*) AS cases,
           min(speedup) AS min_speedup,
           max(speedup) AS max_speedup,
           avg(CASE WHEN verdict = 'faster' THEN 1.0 ELSE 0.0 END) AS share_faster,
           count(*) FILTER (WHERE verdict = 'within noise') AS within_noise,
           count(*) FILTER (WHERE evidence LIKE 'single timing%') AS single_timings,
           list({'log': ln(speedup), 'lo': ln(speedup_lo), 'hi': ln(speedup_hi)}
                ORDER BY candidate_run_id, baseline_run_id) AS logs
    FROM cases
    GROUP BY kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
             baseline, candidate, baseline_name, candidate_name
),
groups AS (
    SELECT * EXCLUDE (logs),
           exp(list_avg(list_transform(logs, lambda x: x.log))) AS geomean_speedup,
           list_transform(logs, lambda x: x.lo) AS log_lo,
           list_transform(logs, lambda x: x.hi) AS log_hi
    FROM gathered
),
-- Resample b's draws of shapes 1..(the largest group's size), then per group size n the first
-- n of them divided by their sum (so that a dot product is the resampled mean); resamples that
-- draw none of the n shapes are left out.
draws AS (
    SELECT b, list(kindex_poisson_draw(kindex_bootstrap_uniform(b, i))::DOUBLE ORDER BY i) AS ws
    FROM range(1, kindex_bootstrap_resamples() + 1) AS r(b)
    CROSS JOIN (SELECT unnest(range(1, max(cases) + 1)) AS i FROM groups) AS shapes
    GROUP BY b
),
weights AS (
    SELECT n, b, list_transform(ws, lambda w: w / total) AS ws
    FROM (
        SELECT n, b, ws[1:n] AS ws, list_sum(ws[1:n]) AS total
        FROM (SELECT DISTINCT cases AS n FROM groups) AS sizes CROSS JOIN draws
    ) AS sliced
    WHERE total > 0
),
numbered AS (
    SELECT *, row_number() OVER () AS group_id FROM groups
),
-- One row per group and resample: the resampled mean log bounds (dot products).
resampled AS (
    SELECT g.group_id,
           list_dot_product(g.log_lo, w.ws) AS log_lo,
           list_dot_product(g.log_hi, w.ws) AS log_hi
    FROM numbered g JOIN weights w ON w.n = g.cases
),
-- The k-th smallest resampled lower bound and k-th largest upper bound, k = ceil(2.5 % of the
-- resamples): min(x, K) keeps the K smallest (a heap, cheaper than quantile's sort).
bounds AS (
    SELECT group_id,
           exp(min(log_lo, ceil(0.025 * kindex_bootstrap_resamples())::BIGINT)
               [greatest(1, ceil(0.025 * count(*)))::BIGINT]) AS geomean_lo,
           exp(max(log_hi, ceil(0.025 * kindex_bootstrap_resamples())::BIGINT)
               [greatest(1, ceil(0.025 * count(*)))::BIGINT]) AS geomean_hi
    FROM resampled
    GROUP BY group_id
)
SELECT g.* EXCLUDE (log_lo, log_hi, group_id), b.geomean_lo, b.geomean_hi,
       kindex_verdict(b.geomean_lo, b.geomean_hi) AS verdict
FROM numbered g JOIN bounds b USING (group_id)
