-- The noise model (issue 17): how far a second run of the same code lands from the first.
-- Included into views/views.sql (read_sql expands its `-- @include views/noise.sql` line), after the
-- time-unit macros and before the pairing, whose verdicts use it.
--
-- Replicate pairs: two passed runs of one series (implementation digest and provider label,
-- kernel, pass, workload, environment, protocol, metric, statistic and unit) that measured the
-- same code (run_code_for: the same declared code, git commit or invocation), consecutive in
-- time. Their change is ln(later / earlier). Pairs of other code under one version label are
-- kept beside them (same_code false): in Liger's history every such pair spans two commits, and
-- real changes among them once made regressions widen their own floors.
-- The model: per environment (a GPU system) and latency class (of the pair's geometric mean),
-- the floor is the kindex_noise_quantile() quantile of |change| of its replicate pairs: the
-- run-to-run change that 95 % of repeats of the same code stay within (sources in
-- noise_model_for). No floor is below kindex_noise_min_floor().
-- Floors are relative changes (0.30: 30 %); the rule works in log space, ln(1 + floor).
--
-- kindex_olap/query/noise.py reads the settings below (one set of constants) and points the
-- view noise_model at a table computed once per connection.

-- Settings.
CREATE OR REPLACE MACRO kindex_noise_quantile() AS 0.95;
-- same-code pairs a floor needs (an environment and class's own, else the class's over every
-- environment); with 8 pairs the 95th percentile is close to their largest change: conservative
CREATE OR REPLACE MACRO kindex_noise_min_pairs() AS 8;
-- same-label pairs (other code under one version label) the robust fallback needs
CREATE OR REPLACE MACRO kindex_noise_min_label_pairs() AS 20;
CREATE OR REPLACE MACRO kindex_noise_min_floor() AS 0.01;
-- the robust fallback: 1.96 / 0.6745, the median |change| of normal noise scaled to the half-width
-- that holds 95 % of it; sparse real changes among the pairs barely move a median
CREATE OR REPLACE MACRO kindex_robust_scale() AS 2.906;
-- runs of one series with no declared code, the same version label and at most this far apart
-- are one invocation (one process: Liger writes one script's rows seconds apart)
CREATE OR REPLACE MACRO kindex_invocation_gap_seconds() AS 600;
CREATE OR REPLACE MACRO kindex_bootstrap_resamples() AS 1000;
CREATE OR REPLACE MACRO kindex_bootstrap_seed() AS 17;

-- Latency classes (by central value in ns) and their default floors, for a class with neither
-- same-code nor enough same-label pairs in the lake: the 95th percentile of the Liger history's
-- same-commit pairs per class (docs/uncertainty.md; tests/test_noise.py recomputes them).
CREATE OR REPLACE MACRO kindex_latency_classes() AS TABLE
SELECT * FROM (VALUES
    (1, '<0.1 ms', 0.0, 1e5, 0.11),
    (2, '0.1-1 ms', 1e5, 1e6, 0.26),
    (3, '1-10 ms', 1e6, 1e7, 0.12),
    (4, '>=10 ms', 1e7, NULL, 0.03)
) AS t(class_rank, latency_class, lower_ns, upper_ns, default_floor);

CREATE OR REPLACE MACRO kindex_latency_class_rank(ns) AS
    CASE WHEN ns < 1e5 THEN 1 WHEN ns < 1e6 THEN 2 WHEN ns < 1e7 THEN 3 WHEN ns >= 1e7 THEN 4 END;

-- The code a passed run measured (code_key, meaningful within its series): runs with the same
-- key are the same code, pooled into one point by history and paired as replicates here. The
-- key is the version label and the declared code: the run label kindex_code, else its git
-- commit (run_provenance), else the label kindex_invocation; a run with none of them is
-- grouped with the runs of its series, version and invocation (no more than
-- kindex_invocation_gap_seconds() after the one before). declared_code is that declaration.
CREATE OR REPLACE MACRO run_code_for(environment_filter, kernel_filter := NULL) AS TABLE
WITH
declared AS (
    SELECT r.run_id, r.kernel, r.pass, r.provider, r.implementation_digest, r.workload_digest,
           r.environment_digest, r.protocol_digest, r.metric, r.statistic, r.unit, r.version,
           r.observed_at,
           coalesce(r.labels['kindex_code'], pv.git_commit,
                    r.labels['kindex_invocation']) AS declared_code
    FROM run_rows r
    LEFT JOIN (SELECT run_id, any_value(git_commit) AS git_commit
               FROM run_provenance GROUP BY run_id) pv USING (run_id)
    WHERE r.status = 'passed'
      AND (environment_filter IS NULL OR list_contains(environment_filter, r.environment_digest))
      AND (kernel_filter IS NULL OR list_contains(kernel_filter, r.kernel))
),
starts AS (
    SELECT *,
           (declared_code IS NULL
            AND (lag(observed_at) OVER w IS NULL
                 OR observed_at - lag(observed_at) OVER w
                    > to_seconds(kindex_invocation_gap_seconds())
                 OR lag(version) OVER w IS DISTINCT FROM version))::INTEGER AS new_invocation
    FROM declared
    WINDOW w AS (PARTITION BY kernel, pass, provider, implementation_digest, workload_digest,
                              environment_digest, protocol_digest, metric, statistic, unit,
                              declared_code IS NULL
                 ORDER BY observed_at, run_id)
)
SELECT run_id, environment_digest, declared_code,
       coalesce(version, '') || ' @ ' || coalesce(
           declared_code,
           'invocation ' || sum(new_invocation) OVER (
               PARTITION BY kernel, pass, provider, implementation_digest, workload_digest,
                            environment_digest, protocol_digest, metric, statistic, unit,
                            declared_code IS NULL
               ORDER BY observed_at, run_id ROWS UNBOUNDED PRECEDING)) AS code_key
FROM starts;

-- Series of repeats: every passed run of one implementation (digest and provider), kernel, pass,
-- workload, environment, protocol, metric, statistic and unit, as one time-ordered list (ties:
-- the smallest run id last, so that the last is the run the pairing calls newest); series of
-- two runs or more; environment_filter: a list of environment digests, kernel_filter: of the
-- runs' kernel labels (NULL: all; the layers' update computes a group of runs at a time).
-- Gathering a list and pairing neighbours cost two thirds of a lag() window over 300k runs.
CREATE OR REPLACE MACRO replicate_series_for(environment_filter, kernel_filter := NULL) AS TABLE
SELECT kernel, pass, provider, implementation_digest, workload_digest, environment_digest,
       protocol_digest, metric, statistic, unit,
       list({'run_id': run_id, 'version': version, 'code': c.code_key,
             'observed_at': observed_at,
             'ns': value * kindex_time_unit_ns(unit),
             'p20_ns': CASE WHEN metric = 'latency' THEN
                 kindex_spread_low(latency_p20_ns, value * kindex_time_unit_ns(unit)) END,
             'p80_ns': CASE WHEN metric = 'latency' THEN
                 kindex_spread_high(latency_p80_ns, value * kindex_time_unit_ns(unit)) END}
            ORDER BY observed_at, run_id DESC) AS timeline
FROM run_rows
JOIN run_code_for(environment_filter, kernel_filter := kernel_filter) c
  USING (run_id, environment_digest)
WHERE status = 'passed' AND value > 0 AND kindex_time_unit_ns(unit) IS NOT NULL
  AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
  AND (kernel_filter IS NULL OR list_contains(kernel_filter, kernel))
GROUP BY kernel, pass, provider, implementation_digest, workload_digest, environment_digest,
         protocol_digest, metric, statistic, unit
HAVING count(*) >= 2;

-- Pairs of neighbours in a series with the same version label (two runs at the same instant
-- are one measurement written twice, not a repeat). same_code: both measured the same code
-- (run_code_for), a replicate pair, the noise model's first source; otherwise other code under
-- one label (a pull-request branch measuring unreleased code under the last release's label),
-- which may hold real changes: only a robust estimate reads those.
CREATE OR REPLACE MACRO replicate_pairs_for(environment_filter, kernel_filter := NULL) AS TABLE
WITH
neighbours AS (
    SELECT * EXCLUDE (timeline, step), timeline[step] AS a, timeline[step + 1] AS b
    FROM (SELECT *, unnest(range(1, len(timeline))) AS step
          FROM replicate_series_for(environment_filter, kernel_filter := kernel_filter))
)
SELECT
    kernel, pass, provider, b.version AS version, metric, statistic, unit,
    workload_digest, environment_digest, protocol_digest, implementation_digest,
    a.run_id AS previous_run_id, b.run_id AS run_id,
    a.observed_at AS previous_observed_at, b.observed_at AS observed_at,
    a.ns AS previous_ns, b.ns AS ns,
    a.p20_ns AS previous_p20_ns, a.p80_ns AS previous_p80_ns, b.p20_ns AS p20_ns,
    b.p80_ns AS p80_ns,
    a.code = b.code AS same_code,
    ln(b.ns / a.ns) AS log_change,
    kindex_latency_class_rank(sqrt(a.ns * b.ns)) AS class_rank
FROM neighbours
WHERE a.version IS NOT DISTINCT FROM b.version AND a.observed_at < b.observed_at;

-- The newest run of each series with the runs of its code there (itself included): their
-- count and range in ns. A pairing side that is this run uses their spread as its noise.
CREATE OR REPLACE MACRO replicate_spread_for(environment_filter, kernel_filter := NULL) AS TABLE
SELECT environment_digest, newest.run_id, len(same) AS runs, list_min(same) AS lowest_ns,
       list_max(same) AS highest_ns
FROM (
    SELECT environment_digest, timeline[-1] AS newest,
           list_transform(list_filter(timeline, lambda x: x.code = timeline[-1].code),
                          lambda x: x.ns) AS same
    FROM replicate_series_for(environment_filter, kernel_filter := kernel_filter)
);

CREATE OR REPLACE VIEW replicate_spread AS
SELECT * FROM replicate_spread_for(NULL);

CREATE OR REPLACE VIEW replicate_pairs AS
SELECT * FROM replicate_pairs_for(NULL);

-- Aggregates over pairs' log changes (NULLs skipped): the floor from same-code pairs, the
-- kindex_noise_quantile() quantile of |change|, and the robust one from same-label pairs.
CREATE OR REPLACE MACRO kindex_replicate_floor(log_change) AS
    exp(quantile_cont(abs(log_change), kindex_noise_quantile())) - 1;
CREATE OR REPLACE MACRO kindex_label_floor(log_change) AS
    exp(kindex_robust_scale() * median(abs(log_change))) - 1;

-- The model computed from the lake's replicate pairs (the view: computed live, or the layer a
-- lake commit stored), for some environments (NULL: all): one row per environment
-- holding time-unit runs and latency class. The floor's source, first that applies:
-- 'replicates' (the environment and class's same-code pairs, kindex_noise_min_pairs() or more),
-- 'replicates, all GPUs' (the class's same-code pairs over every environment of the lake),
-- 'replicates, all classes' (every same-code pair of the lake: few repeats in a class),
-- 'same label' (the environment and class's same-label pairs, robust estimate), 'default'.
CREATE OR REPLACE MACRO noise_model_for(environment_filter) AS TABLE
WITH
environment_classes AS (
    SELECT e.environment_digest, c.*
    FROM (SELECT DISTINCT environment_digest FROM run_rows
          WHERE kindex_time_unit_ns(unit) IS NOT NULL
            AND (environment_filter IS NULL
                 OR list_contains(environment_filter, environment_digest))) e
    CROSS JOIN kindex_latency_classes() c
),
measured AS (
    SELECT environment_digest, class_rank,
           count(*) FILTER (WHERE same_code) AS pairs,
           kindex_replicate_floor(CASE WHEN same_code THEN log_change END) AS measured_floor,
           exp(median(abs(log_change)) FILTER (WHERE same_code)) - 1 AS median_change,
           count(*) FILTER (WHERE NOT same_code) AS label_pairs,
           kindex_label_floor(CASE WHEN NOT same_code THEN log_change END) AS label_floor
    FROM replicate_pairs
    WHERE environment_filter IS NULL OR list_contains(environment_filter, environment_digest)
    GROUP BY environment_digest, class_rank
),
lake_pairs AS (
    SELECT class_rank, log_change FROM replicate_pairs WHERE same_code
),
pooled AS (
    SELECT class_rank, count(*) AS pooled_pairs,
           kindex_replicate_floor(log_change) AS pooled_floor
    FROM lake_pairs GROUP BY class_rank
),
everywhere AS (
    SELECT count(*) AS lake_pairs, kindex_replicate_floor(log_change) AS lake_floor
    FROM lake_pairs
),
env AS (
    SELECT environment_digest,
           kindex_gpu_label(any_value(product), any_value(form_factor)) AS gpu,
           any_value(form_factor) AS form_factor,
           any_value(name) AS environment
    FROM environments GROUP BY environment_digest
),
chosen AS (
    SELECT ec.*, coalesce(m.pairs, 0) AS pairs, m.measured_floor, m.median_change,
           coalesce(m.label_pairs, 0) AS label_pairs, m.label_floor,
           coalesce(p.pooled_pairs, 0) AS pooled_pairs, p.pooled_floor, w.lake_floor,
           CASE WHEN m.pairs >= kindex_noise_min_pairs() THEN 'replicates'
                WHEN p.pooled_pairs >= kindex_noise_min_pairs() THEN 'replicates, all GPUs'
                WHEN w.lake_pairs >= kindex_noise_min_pairs() THEN 'replicates, all classes'
                WHEN m.label_pairs >= kindex_noise_min_label_pairs() THEN 'same label'
                ELSE 'default' END AS source
    FROM environment_classes ec
    LEFT JOIN measured m USING (environment_digest, class_rank)
    LEFT JOIN pooled p USING (class_rank)
    CROSS JOIN everywhere w
)
SELECT
    c.environment_digest, env.gpu, env.form_factor, env.environment,
    c.class_rank, c.latency_class, c.lower_ns, c.upper_ns,
    c.pairs, c.measured_floor, c.median_change, c.pooled_pairs, c.pooled_floor,
    c.label_pairs, c.label_floor,
    greatest(
        CASE c.source WHEN 'replicates' THEN c.measured_floor
                      WHEN 'replicates, all GPUs' THEN c.pooled_floor
                      WHEN 'replicates, all classes' THEN c.lake_floor
                      WHEN 'same label' THEN c.label_floor
                      ELSE c.default_floor END,
        kindex_noise_min_floor()) AS floor,
    c.source
FROM chosen c
LEFT JOIN env USING (environment_digest);

-- What the pairing reads; kindex_olap.query.noise.materialize points noise_model, noise_floors
-- and replicate_spread at tables that hold the environments a connection's queries need, each
-- computed once.
CREATE OR REPLACE VIEW noise_model AS
SELECT * FROM noise_model_for(NULL);

-- One row per environment: its four floors in log space and their sources, by class rank (a
-- list indexed by kindex_latency_class_rank), for some environments (NULL: all).
CREATE OR REPLACE MACRO noise_floors_for(environment_filter) AS TABLE
SELECT environment_digest,
       list(ln(1 + floor) ORDER BY class_rank) AS log_floors,
       list(source ORDER BY class_rank) AS sources
FROM noise_model
WHERE environment_filter IS NULL OR list_contains(environment_filter, environment_digest)
GROUP BY environment_digest;

CREATE OR REPLACE VIEW noise_floors AS
SELECT * FROM noise_floors_for(NULL);

-- A side's noise (log half-width): one run's share of the class floor (two single runs
-- combine to the floor: sqrt(2 * (f / sqrt(2))^2) = f); with replicates of its version in the
-- cell, their spread around its value, but never less than the floor's share for that many
-- runs (f / sqrt(2 * runs)): the range of two or three draws is often far narrower than the
-- run-to-run noise replicate pairs measure, and a step judged by it would not survive a rerun
-- (bench/verdict_core.py --replicates 2 flagged 5-10 % steps between points of two runs with
-- "noise +-1.1 %" where the class floor was 14 %). Never below the minimum floor's share.
CREATE OR REPLACE MACRO kindex_side_noise(value, runs, lowest, highest, log_floor) AS
    greatest(
        CASE WHEN runs >= 2 THEN greatest(ln(highest / value), ln(value / lowest),
                                          log_floor / sqrt(2 * runs))
             ELSE log_floor / sqrt(2) END,
        ln(1 + kindex_noise_min_floor()) / sqrt(2));

-- Both sides' noise combined (independent runs).
CREATE OR REPLACE MACRO kindex_pair_noise(candidate_noise, baseline_noise) AS
    sqrt(candidate_noise * candidate_noise + baseline_noise * baseline_noise);

-- A run's evidence: one timed call (samples = 1, or p20 = median = p80 where the source gives
-- no sample count: Liger's do_bench times a call longer than its 10 ms budget's half once).
CREATE OR REPLACE MACRO kindex_single_timing(samples, value, p20, p80) AS
    coalesce(samples = 1, p20 = value AND p80 = value, false);

-- Per passed time-unit run, what its noise as one side of a speedup is computed from, nothing
-- that depends on other series (stored with the pairs: kindex_olap.layers): its value in ns and
-- latency class, the spread of its version's runs in its series when it is the series' newest
-- run (spread_runs, lowest_ns, highest_ns), how many runs stand behind it (runs: that count,
-- else 1), its sample count and whether it is a single timing.
CREATE OR REPLACE MACRO run_sides_for(environment_filter) AS TABLE
SELECT r.run_id, r.environment_digest,
       coalesce(s.runs, 1) AS runs,
       r.ns, r.class_rank,
       s.runs AS spread_runs, s.lowest_ns, s.highest_ns,
       r.samples,
       kindex_single_timing(r.samples, r.value, r.p20, r.p80) AS single_timing
FROM (
    SELECT run_id, environment_digest, samples, value,
           latency_p20_ns / kindex_time_unit_ns(unit) AS p20,  -- in the value's unit
           latency_p80_ns / kindex_time_unit_ns(unit) AS p80,
           value * kindex_time_unit_ns(unit) AS ns,
           kindex_latency_class_rank(value * kindex_time_unit_ns(unit)) AS class_rank
    FROM run_rows
    WHERE status = 'passed' AND value > 0 AND kindex_time_unit_ns(unit) IS NOT NULL
      AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
) r
LEFT JOIN replicate_spread s USING (run_id);

-- A side's noise (log half-width, kindex_side_noise) from its run_sides_for inputs and its
-- environment's floors (a noise_floors row), and where that comes from: 'spread' of its
-- replicates, else its class floor's source.
CREATE OR REPLACE MACRO kindex_run_noise(ns, spread_runs, lowest_ns, highest_ns, class_rank,
                                         log_floors) AS
    CASE WHEN ns IS NOT NULL
         THEN kindex_side_noise(ns, spread_runs, lowest_ns, highest_ns, log_floors[class_rank])
    END;
CREATE OR REPLACE MACRO kindex_noise_source(spread_runs, class_rank, sources) AS
    CASE WHEN spread_runs >= 2 THEN 'spread' ELSE sources[class_rank] END;

-- Per passed time-unit run: its noise as one side of a speedup (log_noise), where that comes
-- from (noise_source), and run_sides_for's runs, samples and single_timing.
CREATE OR REPLACE MACRO run_noise_for(environment_filter) AS TABLE
SELECT r.run_id, r.environment_digest, r.runs,
       kindex_run_noise(r.ns, r.spread_runs, r.lowest_ns, r.highest_ns, r.class_rank,
                        f.log_floors) AS log_noise,
       kindex_noise_source(r.spread_runs, r.class_rank, f.sources) AS noise_source,
       r.samples, r.single_timing
FROM run_sides_for(environment_filter) r
LEFT JOIN noise_floors f USING (environment_digest);

CREATE OR REPLACE VIEW run_noise AS
SELECT * FROM run_noise_for(NULL);

-- Poisson bootstrap weights: resample b draws case i kindex_poisson_draw(u) times, u from a
-- seeded integer hash (squaring modulo the prime 2^31 - 1, three rounds: BIGINT arithmetic only, so the same
-- in DuckDB and Spark, across versions and thread counts).
CREATE OR REPLACE MACRO kindex_hash_round(x) AS (x * x + 12345) % 2147483647;
CREATE OR REPLACE MACRO kindex_bootstrap_uniform(b, i) AS
    kindex_hash_round(kindex_hash_round(kindex_hash_round(
        (kindex_bootstrap_seed()::BIGINT * 1000003 + b::BIGINT * 7919 + i::BIGINT * 104729)
        % 2147483647))) / 2147483647.0;
-- Poisson(1) draw from a uniform u in [0, 1) (inverse CDF; 7+ has probability 8e-5: drawn as 6).
CREATE OR REPLACE MACRO kindex_poisson_draw(u) AS
    CASE WHEN u < 0.36787944 THEN 0 WHEN u < 0.73575888 THEN 1 WHEN u < 0.91969860 THEN 2
         WHEN u < 0.98101184 THEN 3 WHEN u < 0.99634015 THEN 4 WHEN u < 0.99940582 THEN 5
         ELSE 6 END;

-- The noise verb's rows: the model, optionally for some environments (kindex query "noise h100").
CREATE OR REPLACE MACRO noise_for(kernel_filter, environment_filter, pass_filter) AS TABLE
SELECT * FROM noise_model
WHERE environment_filter IS NULL OR list_contains(environment_filter, environment_digest);

-- Every passed run's code (run_code_for over the whole lake): history pools and pairs by it.
CREATE OR REPLACE VIEW run_code AS
SELECT * FROM run_code_for(NULL);
