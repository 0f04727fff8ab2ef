-- The noise model (issue 17): how far a second run of the same code lands from the first.
-- Included into views/views.sql (read_sql expands its `-- @include views/noise.sql` line), after the
-- time-unit macros and before the pairing, whose verdicts use it.
--
-- Replicate pairs: two passed runs of one implementation (digest and provider), version,
-- kernel, pass, workload, environment, protocol, metric, statistic and unit, consecutive in time
-- (the later run and the one just before it; two runs at the same instant are one benchmark
-- invocation, not a repeat). Their change is ln(later / earlier).
-- The model: per environment (a GPU system) and latency class (of the pair's geometric mean),
-- the floor is the kindex_noise_quantile() quantile of |change| of its replicate pairs: the
-- run-to-run change that 95 % of repeats of the same code stay within. A class needs
-- kindex_noise_min_pairs() pairs (source 'replicates'); with fewer, the class's documented
-- default (source 'default'). No floor is below kindex_noise_min_floor().
-- Floors are relative changes (0.30: 30 %); the rule works in log space, ln(1 + floor).
--
-- kindex_olap/query/noise.py reads the settings below (one set of constants) and points the
-- view noise_model at a table computed once per connection.

-- Settings.
CREATE OR REPLACE MACRO kindex_noise_quantile() AS 0.95;
CREATE OR REPLACE MACRO kindex_noise_min_pairs() AS 20;
CREATE OR REPLACE MACRO kindex_noise_min_floor() AS 0.01;
CREATE OR REPLACE MACRO kindex_bootstrap_resamples() AS 1000;
CREATE OR REPLACE MACRO kindex_bootstrap_seed() AS 17;

-- Latency classes (by central value in ns) and their default floors: the Liger-history lake's
-- pooled class floors (docs/uncertainty.md; tests/test_noise.py recomputes them).
CREATE OR REPLACE MACRO kindex_latency_classes() AS TABLE
SELECT * FROM (VALUES
    (1, '<0.1 ms', 0.0, 1e5, 0.48),
    (2, '0.1-1 ms', 1e5, 1e6, 0.39),
    (3, '1-10 ms', 1e6, 1e7, 0.14),
    (4, '>=10 ms', 1e7, NULL, 0.29)
) AS t(class_rank, latency_class, lower_ns, upper_ns, default_floor);

CREATE OR REPLACE MACRO kindex_latency_class_rank(ns) AS
    CASE WHEN ns < 1e5 THEN 1 WHEN ns < 1e6 THEN 2 WHEN ns < 1e7 THEN 3 WHEN ns >= 1e7 THEN 4 END;

-- Series of repeats: every passed run of one implementation (digest and provider), kernel, pass,
-- workload, environment, protocol, metric, statistic and unit, as one time-ordered list (ties:
-- the smallest run id last, so that the last is the run the pairing calls newest); series of
-- two runs or more; environment_filter: a list of environment digests (NULL: all). Gathering a
-- list and pairing neighbours cost two thirds of a lag() window over 300k runs.
CREATE OR REPLACE MACRO replicate_series_for(environment_filter) AS TABLE
SELECT kernel, pass, provider, implementation_digest, workload_digest, environment_digest,
       protocol_digest, metric, statistic, unit,
       list({'run_id': run_id, 'version': version, 'observed_at': observed_at,
             'ns': value * kindex_time_unit_ns(unit),
             'p20_ns': CASE WHEN metric = 'latency' THEN latency_p20_ns END,
             'p80_ns': CASE WHEN metric = 'latency' THEN latency_p80_ns END}
            ORDER BY observed_at, run_id DESC) AS timeline
FROM runs
WHERE status = 'passed' AND value > 0 AND kindex_time_unit_ns(unit) IS NOT NULL
  AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
GROUP BY kernel, pass, provider, implementation_digest, workload_digest, environment_digest,
         protocol_digest, metric, statistic, unit
HAVING count(*) >= 2;

-- Replicate pairs (see the header): neighbours in a series with the same version.
CREATE OR REPLACE MACRO replicate_pairs_for(environment_filter) AS TABLE
WITH
neighbours AS (
    SELECT * EXCLUDE (timeline, step), timeline[step] AS a, timeline[step + 1] AS b
    FROM (SELECT *, unnest(range(1, len(timeline))) AS step
          FROM replicate_series_for(environment_filter))
)
SELECT
    kernel, pass, provider, b.version AS version, metric, statistic, unit,
    workload_digest, environment_digest, protocol_digest, implementation_digest,
    a.run_id AS previous_run_id, b.run_id AS run_id,
    a.observed_at AS previous_observed_at, b.observed_at AS observed_at,
    a.ns AS previous_ns, b.ns AS ns,
    a.p20_ns AS previous_p20_ns, a.p80_ns AS previous_p80_ns, b.p20_ns AS p20_ns,
    b.p80_ns AS p80_ns,
    ln(b.ns / a.ns) AS log_change,
    kindex_latency_class_rank(sqrt(a.ns * b.ns)) AS class_rank
FROM neighbours
WHERE a.version IS NOT DISTINCT FROM b.version AND a.observed_at < b.observed_at;

-- The newest run of each series with the runs of its version there (itself included): their
-- count and range in ns. A pairing side that is this run uses their spread as its noise.
CREATE OR REPLACE MACRO replicate_spread_for(environment_filter) AS TABLE
SELECT environment_digest, newest.run_id, len(same) AS runs, list_min(same) AS lowest_ns,
       list_max(same) AS highest_ns
FROM (
    SELECT environment_digest, timeline[-1] AS newest,
           list_transform(
               list_filter(timeline,
                           lambda x: x.version IS NOT DISTINCT FROM timeline[-1].version),
               lambda x: x.ns) AS same
    FROM replicate_series_for(environment_filter)
);

CREATE OR REPLACE VIEW replicate_spread AS
SELECT * FROM replicate_spread_for(NULL);

CREATE OR REPLACE VIEW replicate_pairs AS
SELECT * FROM replicate_pairs_for(NULL);

-- The model computed from the lake, for some environments (NULL: all): one row per environment
-- holding time-unit runs and latency class.
CREATE OR REPLACE MACRO noise_model_for(environment_filter) AS TABLE
WITH
environment_classes AS (
    SELECT e.environment_digest, c.*
    FROM (SELECT DISTINCT environment_digest FROM runs
          WHERE kindex_time_unit_ns(unit) IS NOT NULL
            AND (environment_filter IS NULL
                 OR list_contains(environment_filter, environment_digest))) e
    CROSS JOIN kindex_latency_classes() c
),
measured AS (
    SELECT environment_digest, class_rank, count(*) AS pairs,
           exp(quantile_cont(abs(log_change), kindex_noise_quantile())) - 1 AS measured_floor,
           exp(median(abs(log_change))) - 1 AS median_change
    FROM replicate_pairs_for(environment_filter)
    GROUP BY environment_digest, class_rank
),
env AS (
    SELECT environment_digest, any_value(product) AS gpu, any_value(form_factor) AS form_factor,
           any_value(name) AS environment
    FROM environments GROUP BY environment_digest
)
SELECT
    ec.environment_digest, env.gpu, env.form_factor, env.environment,
    ec.class_rank, ec.latency_class, ec.lower_ns, ec.upper_ns,
    coalesce(m.pairs, 0) AS pairs,
    m.measured_floor,
    m.median_change,
    greatest(
        CASE WHEN m.pairs >= kindex_noise_min_pairs() THEN m.measured_floor
             ELSE ec.default_floor END,
        kindex_noise_min_floor()) AS floor,
    CASE WHEN m.pairs >= kindex_noise_min_pairs() THEN 'replicates' ELSE 'default' END AS source
FROM environment_classes ec
LEFT JOIN measured m USING (environment_digest, class_rank)
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

-- A side's noise (log half-width): with replicates of its version in the cell, their spread
-- around its value; else one run's share of the class floor (two single runs combine to the
-- floor: sqrt(2 * (f / sqrt(2))^2) = f). Never below the minimum floor's share.
CREATE OR REPLACE MACRO kindex_side_noise(value, runs, lowest, highest, log_floor) AS
    greatest(
        CASE WHEN runs >= 2 THEN greatest(ln(highest / value), ln(value / lowest))
             ELSE log_floor / sqrt(2) END,
        ln(1 + kindex_noise_min_floor()) / sqrt(2));

-- Both sides' noise combined (independent runs).
CREATE OR REPLACE MACRO kindex_pair_noise(candidate_noise, baseline_noise) AS
    sqrt(candidate_noise * candidate_noise + baseline_noise * baseline_noise);

-- A run's evidence: one timed call (samples = 1, or p20 = median = p80 where the source gives
-- no sample count: Liger's do_bench times a call longer than its 10 ms budget's half once).
CREATE OR REPLACE MACRO kindex_single_timing(samples, value, p20, p80) AS
    coalesce(samples = 1, p20 = value AND p80 = value, false);

-- Per passed time-unit run: its noise as one side of a speedup (log_noise, kindex_side_noise),
-- where that comes from (noise_source: 'spread' of its replicates, else its class floor's
-- source), how many runs stand behind it (runs: its version's runs in its series when it is
-- the series' newest run, else 1), its sample count and whether it is a single timing. The
-- pairing joins this by run id: computing it there cost a third more planning per query.
CREATE OR REPLACE MACRO run_noise_for(environment_filter) AS TABLE
SELECT r.run_id, r.environment_digest,
       coalesce(s.runs, 1) AS runs,
       kindex_side_noise(r.ns, s.runs, s.lowest_ns, s.highest_ns, f.log_floors[r.class_rank])
           AS log_noise,
       CASE WHEN s.runs >= 2 THEN 'spread' ELSE f.sources[r.class_rank] END AS noise_source,
       r.samples,
       kindex_single_timing(r.samples, r.value, r.p20, r.p80) AS single_timing
FROM (
    SELECT run_id, environment_digest, samples, value, latency_p20_ns AS p20,
           latency_p80_ns AS p80, value * kindex_time_unit_ns(unit) AS ns,
           kindex_latency_class_rank(value * kindex_time_unit_ns(unit)) AS class_rank
    FROM runs
    WHERE status = 'passed' AND value > 0 AND kindex_time_unit_ns(unit) IS NOT NULL
      AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
) r
LEFT JOIN noise_floors f USING (environment_digest)
LEFT JOIN replicate_spread s USING (run_id);

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
