-- Views over a lake commit, defined on every connection by kindex_olap.query.engine (connect),
-- and written out with them by `kindex shell --sql-file` (kindex_olap.doors.shell). It includes
-- views/noise.sql and views/history.sql.
-- The views of the tables themselves (runs, measurements, ...) come first, from
-- kindex_olap.lake.tables.scan_sql: each reads its Delta table's data files from a
-- DuckDB variable (<table>_files) that kindex_olap.query.engine sets from the lake commit, with
-- the partition columns (source, year) taken from the folder names (Delta keeps them out of the
-- files). engine.init_sql() replaces each getvariable('<table>_files') with a quoted literal list
-- for a persisted .duckdb file or the DuckDB CLI.
--
-- Comparability: two runs are compared only when they share kernel, pass, workload digest,
-- environment digest, protocol digest (hence family, timer and statistic), metric and unit, a
-- time read in ns whatever unit its run gave (observed_values_for), so ms and ns runs pair.
-- Kernel, pass, statistic and unit are matched with IS NOT DISTINCT FROM: KernelIndex catalog
-- runs publish no pass (NULL), and two runs that both leave it unset under one protocol digest
-- measured the same thing. The digests must be present and equal.
-- Ratios are baseline / candidate (> 1: the candidate is faster or smaller); the interval
-- [base p20 / cand p80, base p80 / cand p20] is conservative; a verdict is 'within noise' when
-- the interval contains 1. A run without p20/p80 contributes its central value to both ends; a
-- run's p20/p80 are widened to hold its central value (kindex_spread_low/high).
--
-- Default baseline of a cell (baseline_rule):
--   'reference': the first provider present in ['torch', 'huggingface', 'torch_compile',
--     'torchcompile', 'megatron', 'megatron-unfused', 'deepspeed_tiled', 'megatron-fused',
--     'megatron-fused-plus-cpl', 'megatron-unfused-plus-cpl'] (the reference implementations);
--   'fastest': in a cell with none of them (leaderboards: GPU MODE KernelBot, FlashInfer-Bench,
--     SOL-ExecBench), the implementation whose newest passed run has the lowest central value
--     (ties: the smallest implementation digest).
-- Default candidates: every implementation of the cell other than its baseline (on B200 Liger
-- ships liger_triton, liger_cutedsl and liger_cutile; each is compared, the candidate column
-- says which).
--
-- Time-like metrics: speedups pair every metric whose unit is a time unit (ns, us, ms, s: e.g.
-- latency, and GPU MODE's score, a geometric mean of per-case times in s), always within one
-- metric, statistic and protocol; the pairing reads every time in ns (unit 'ns').

-- The derived views are table macros called without filters; kindex query calls the same
-- macros with its kernel / environment / pass filters as bound list parameters, so the filters
-- reach the runs scan (row-group statistics of the sorted runs files prune it) before the
-- latest-run ranking, the reference-provider window and the pair self-join. NULL: no filter.
-- Every filtered column is a comparability key, so filtering first never changes a pair.

-- A GPU as people name it, its model: the product and its form factor ("NVIDIA H100 PCIe",
-- "NVIDIA H100 80GB HBM3": one product, two models). Every view's `gpu` column is this label,
-- so that grouping by gpu never pools two models; form_factor stays a column of its own. A
-- label that ends with its form factor already is kept (the macro applies to a label twice
-- without harm). The one place the label is built in SQL; Python's is kindex_olap.labels.
CREATE OR REPLACE MACRO kindex_gpu_label(gpu, form_factor) AS
    CASE WHEN coalesce(form_factor, '') = '' OR ends_with(gpu, ' ' || form_factor) THEN gpu
         ELSE concat_ws(' ', gpu, form_factor) END;

-- The runs table with each run's GPU model: `SELECT gpu, count(*) FROM runs GROUP BY ALL` is
-- then one question. The table's rows as stored are the view run_rows (kindex_olap.lake.tables
-- .STORED_VIEW), which every view below reads: DuckDB does not drop an unused LEFT JOIN, and
-- this one would cost every scan of the runs a hash join with the environments.
CREATE OR REPLACE VIEW runs AS
SELECT r.*, e.gpu
FROM run_rows r
LEFT JOIN (SELECT environment_digest,
                  kindex_gpu_label(any_value(product), any_value(form_factor)) AS gpu
           FROM environments GROUP BY environment_digest) e USING (environment_digest);

-- Nanoseconds per unit of a time unit; NULL for any other unit (bytes, tokens/s, ...).
CREATE OR REPLACE MACRO kindex_time_unit_ns(unit) AS
    CASE unit WHEN 'ns' THEN 1.0 WHEN 'us' THEN 1e3 WHEN 'µs' THEN 1e3 WHEN 'μs' THEN 1e3
              WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 END;

-- A run's shape: its workload's (the workloads table: the importers and catalog exports
-- describe them), else the one a Liger-shaped externalId names (benchmark/provider/gpu/SHAPE/
-- time, a memory run's benchmark/memory/provider/gpu/SHAPE/time: KernelIndex's and kindex's
-- Liger importers, and CI bundles written like them), else 'workload ' and the workload
-- digest's first 12 hex digits. A bundle carries no workload document, so bundles ingested as
-- they come (a CI fleet's) had no shape: rows of two workloads read alike.
-- Only a benchmark of kernel/pass (one '/', as both importers write it) is read so: the
-- position of its shape is then fixed, and finding it costs 0.27 us a run where counting the
-- benchmark's segments with a regular expression cost 0.91 (over 300k runs without a described
-- workload; a string's length, the other way, is a list's in the Spark port).
CREATE OR REPLACE MACRO kindex_run_shape(described, benchmark, external_id, metric, workload) AS
    coalesce(
        nullif(described, ''),
        CASE WHEN strpos(benchmark, '/') > 0
                  AND strpos(substr(benchmark, strpos(benchmark, '/') + 1), '/') = 0
                  AND starts_with(external_id, benchmark || '/')
             THEN nullif(split_part(external_id, '/',
                 CASE WHEN metric = 'memory' AND split_part(external_id, '/', 3) = 'memory'
                      THEN 6 ELSE 5 END), '') END,
        'workload ' || substr(workload, 8, 12));

-- One row per run with its dimensions, whatever its metric; also the run's latency p20/p80
-- (kindex_latency's input). Dimension tables may hold a digest more than once (re-ingested
-- documents), hence the any_value lookups. The kernel of a run is its workload's operation,
-- else the kernel parsed from its benchmark name: runs whose own kernel column differs from
-- their workload's operation are found through the workloads table (the second branch of r).
CREATE OR REPLACE MACRO observations_wide_for(kernel_filter, environment_filter, pass_filter)
AS TABLE
WITH
    w AS (SELECT workload_digest, any_value(operation) AS operation,
                 any_value(operation_spec_digest) AS operation_spec_digest, any_value(dtype) AS dtype,
                 any_value(shape) AS shape, any_value(axes) AS axes
          FROM workloads GROUP BY workload_digest),
    i AS (SELECT implementation_digest, any_value(provider) AS provider,
                 any_value(display_name) AS display_name
          FROM implementations GROUP BY implementation_digest),
    o AS (SELECT operation_spec_digest, any_value(family) AS family
          FROM operations GROUP BY operation_spec_digest),
    e AS (SELECT environment_digest, any_value(name) AS name, any_value(product) AS product,
                 any_value(form_factor) AS form_factor, any_value(architecture) AS architecture
          FROM environments GROUP BY environment_digest),
    p AS (SELECT protocol_digest, any_value(comparability_family) AS family,
                 any_value(timer) AS timer
          FROM protocols GROUP BY protocol_digest),
    r AS (
        SELECT * FROM run_rows
        WHERE (kernel_filter IS NULL OR list_contains(kernel_filter, kernel))
          AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
          AND (pass_filter IS NULL OR list_contains(pass_filter, pass))
        UNION ALL
        SELECT * FROM run_rows
        WHERE kernel_filter IS NOT NULL
          AND (kernel IS NULL OR NOT list_contains(kernel_filter, kernel))
          AND workload_digest IN (
              SELECT workload_digest FROM workloads WHERE list_contains(kernel_filter, operation))
          AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
          AND (pass_filter IS NULL OR list_contains(pass_filter, pass))
    )
SELECT
    r.run_id,
    coalesce(w.operation, r.kernel) AS kernel,
    o.family AS operation_family,
    r.pass,
    -- the run's own provider label before its implementation's: KernelIndex's curation gives
    -- some providers one implementation digest (a digest of language and licence: torch and
    -- megatron, huggingface and deepspeed_tiled, liger and liger_tiled), and with the
    -- implementation's label a cell's torch runs read as megatron's, its reference went
    -- missing and two providers' runs were one implementation's newest
    coalesce(r.provider, i.provider) AS provider,
    CASE WHEN r.provider IS DISTINCT FROM i.provider AND r.provider IS NOT NULL
         THEN coalesce(r.display_name, r.provider)
         ELSE coalesce(i.display_name, r.display_name) END AS implementation,
    kindex_gpu_label(e.product, e.form_factor) AS gpu,
    e.form_factor,
    e.architecture AS gpu_arch,
    e.name AS environment,
    p.family AS protocol_family,
    p.timer,
    r.metric,
    r.statistic,
    r.unit,
    r.value,
    kindex_run_shape(w.shape, r.benchmark, r.external_id, r.metric, r.workload_digest) AS shape,
    w.dtype,
    w.axes,
    r.version,
    r.observed_at,
    r.status,
    r.source,
    r.workload_digest,
    r.environment_digest,
    r.protocol_digest,
    r.implementation_digest,
    r.samples,
    r.latency_p20_ns,
    r.latency_p80_ns,
    -- the run's own provider label as it came (NULL where its externalId names none, and
    -- `provider` is its implementation's)
    r.provider AS run_provider
FROM r
LEFT JOIN w USING (workload_digest)
LEFT JOIN o ON o.operation_spec_digest = w.operation_spec_digest
LEFT JOIN i USING (implementation_digest)
LEFT JOIN e USING (environment_digest)
LEFT JOIN p USING (protocol_digest)
WHERE kernel_filter IS NULL OR list_contains(kernel_filter, coalesce(w.operation, r.kernel));

CREATE OR REPLACE MACRO observations_for(kernel_filter, environment_filter, pass_filter)
AS TABLE
SELECT * EXCLUDE (latency_p20_ns, latency_p80_ns)
FROM observations_wide_for(kernel_filter, environment_filter, pass_filter);

CREATE OR REPLACE VIEW observations AS
SELECT * FROM observations_for(NULL, NULL, NULL);

-- Latency runs: one row per run with median (the primary statistic's value), p20 and p80.
CREATE OR REPLACE MACRO latency_for(kernel_filter, environment_filter, pass_filter) AS TABLE
SELECT
    * EXCLUDE (value, latency_p20_ns, latency_p80_ns),
    value * kindex_time_unit_ns(unit) AS median_ns,  -- the value is in the run's unit
    latency_p20_ns AS p20_ns,
    latency_p80_ns AS p80_ns
FROM observations_wide_for(kernel_filter, environment_filter, pass_filter)
WHERE metric = 'latency';

CREATE OR REPLACE VIEW latency AS
SELECT * FROM latency_for(NULL, NULL, NULL);

-- A run's spread around its central value: its p20 and p80 as the source gave them, widened to
-- hold the value where they leave it out. A median above its own p80 (the quantiles of another
-- sample, or a hand-edited bundle) gave a speedup interval without the speedup in it (1.70x
-- "[0.89, 1.12] within noise"); no real run has one (Liger's CSV history, the KernelIndex
-- exports). NULL stays NULL: a run without p20/p80 contributes its value to both ends.
CREATE OR REPLACE MACRO kindex_spread_low(p20, value) AS
    CASE WHEN p20 > value THEN value ELSE p20 END;
CREATE OR REPLACE MACRO kindex_spread_high(p80, value) AS
    CASE WHEN p80 < value THEN value ELSE p80 END;

-- Runs of one metric (metric_filter; NULL: any) and of a list of units (unit_filter; NULL: any)
-- with the central value and its p20/p80 spread (latency from runs' columns, other metrics from
-- measurements), the input of the pairing.
CREATE OR REPLACE MACRO observed_values_for(
    kernel_filter, environment_filter, pass_filter, metric_filter, unit_filter := NULL) AS TABLE
SELECT
    o.* EXCLUDE (unit, value, latency_p20_ns, latency_p80_ns),
    -- a time is read in ns (its unit 'ns'), whatever unit its run gave: two runs that share
    -- every comparability key pair although one says ms and the other ns (a CI fleet's run
    -- without timing, in ms, beside a baseline in ns paired with nothing). Other units as given.
    CASE WHEN kindex_time_unit_ns(o.unit) IS NULL THEN o.unit ELSE 'ns' END AS unit,
    o.value * coalesce(kindex_time_unit_ns(o.unit), 1.0) AS value,
    -- a latency's p20/p80 are stored in ns (a run without timing takes its first measurement's
    -- value, in its unit: 1.0 ms read against a p20 of 900000 ns was an interval of
    -- [1.6e-06, 2.5e+06]); another metric's are in its value's unit
    kindex_spread_low(CASE WHEN o.metric = 'latency' THEN o.latency_p20_ns
                           ELSE m.p20 * coalesce(kindex_time_unit_ns(o.unit), 1.0) END,
                      o.value * coalesce(kindex_time_unit_ns(o.unit), 1.0)) AS p20,
    kindex_spread_high(CASE WHEN o.metric = 'latency' THEN o.latency_p80_ns
                            ELSE m.p80 * coalesce(kindex_time_unit_ns(o.unit), 1.0) END,
                       o.value * coalesce(kindex_time_unit_ns(o.unit), 1.0)) AS p80
FROM observations_wide_for(kernel_filter, environment_filter, pass_filter) o
LEFT JOIN (
    SELECT run_id, metric, unit,
           any_value(value) FILTER (WHERE statistic = 'p20') AS p20,
           any_value(value) FILTER (WHERE statistic = 'p80') AS p80
    FROM measurements
    WHERE metric <> 'latency' AND (metric_filter IS NULL OR metric = metric_filter)
      AND (unit_filter IS NULL OR list_contains(unit_filter, unit))
    GROUP BY ALL
) m ON m.run_id = o.run_id AND m.metric = o.metric AND m.unit = o.unit
WHERE o.metric IS NOT NULL AND (metric_filter IS NULL OR o.metric = metric_filter)
  AND (unit_filter IS NULL OR list_contains(unit_filter, o.unit));

CREATE OR REPLACE VIEW observed_values AS
SELECT * FROM observed_values_for(NULL, NULL, NULL, NULL);

-- The reference implementations' preference: see the header. NULL for any other provider.
CREATE OR REPLACE MACRO kindex_reference_rank(provider) AS
    list_position(['torch', 'huggingface', 'torch_compile', 'torchcompile', 'megatron',
                   'megatron-unfused', 'deepspeed_tiled', 'megatron-fused',
                   'megatron-fused-plus-cpl', 'megatron-unfused-plus-cpl'], provider);

-- Which implementation is a cell's default baseline: one rule for the pairs (pair_rows_for) and
-- for history (history_runs_for), aggregates over the newest passed run of each implementation
-- of a cell. The reference label (kindex_reference_rank: torch, else huggingface, ...) if the
-- cell has one; else the implementation (digest and label) whose newest run is fastest, ties to
-- the smallest digest, then label. Both apply it to the run's own provider label
-- (observations_wide_for's provider; history.sql's header).
CREATE OR REPLACE MACRO kindex_reference_label(label) AS
    arg_min(label, (kindex_reference_rank(label), label))
        FILTER (WHERE kindex_reference_rank(label) IS NOT NULL);
CREATE OR REPLACE MACRO kindex_fastest_implementation(implementation_digest, label, value) AS
    arg_min({'digest': implementation_digest, 'label': label},
            (value, implementation_digest, label))
        FILTER (WHERE value > 0);

-- Natural order of answers (kindex query's ORDER BY): passes forward, backward, full, then the
-- rest; shapes by their text with the numbers taken out, then by the numbers as numbers
-- (vocab4096 < vocab8192 < vocab131072, not the text order 131072 < 4096).
CREATE OR REPLACE MACRO kindex_pass_order(pass) AS
    coalesce(list_position(['forward', 'backward', 'full'], pass), 4);
CREATE OR REPLACE MACRO kindex_shape_order(shape) AS
    {'form': regexp_replace(shape, '[0-9]+', '#', 'g'),
     'numbers': list_transform(regexp_extract_all(shape, '[0-9]+(\.[0-9]+)?'),
                               lambda x: TRY_CAST(x AS DOUBLE))};

-- The units kindex_time_unit_ns knows (speedups' unit_filter).
CREATE OR REPLACE MACRO kindex_time_units() AS ['ns', 'us', 'µs', 'μs', 'ms', 's'];

-- @include views/noise.sql

-- Passed runs ranked inside their cell: newest first per implementation, and per version.
-- (comparable_pairs_for finds the rank-1 runs with the same orderings as first(run_id ORDER BY
-- ...) aggregates: DuckDB's window operator costs far more here, 3 s against 0.2 s at 1M runs.)
CREATE OR REPLACE VIEW ranked_runs AS
SELECT
    *,
    row_number() OVER (
        PARTITION BY kernel, pass, workload_digest, environment_digest, protocol_digest,
                     metric, statistic, unit, implementation_digest, provider
        ORDER BY observed_at DESC, run_id) AS newest_rank,
    row_number() OVER (
        PARTITION BY kernel, pass, workload_digest, environment_digest, protocol_digest,
                     metric, statistic, unit, implementation_digest, provider, version
        ORDER BY observed_at DESC, run_id) AS newest_in_version_rank,
    kindex_reference_rank(provider) AS reference_rank
FROM observed_values
WHERE status = 'passed';

-- Pairs of comparable runs (every ordered pair of implementations of one cell), with each side's
-- noise inputs (run_sides_for) but not its noise, which reads the lake-wide floors: what the
-- layer layer_pairs stores per lake commit (kindex_olap.layers), computed per environment.
-- pairing = 'latest': the newest passed run of each side, whatever their versions.
-- pairing = 'same_version': every pair of runs labelled with the same version;
-- latest_in_version marks the newest run of each side within that version.
-- The reference provider of a cell is chosen among all its passed runs.
CREATE OR REPLACE MACRO pair_rows_for(
    kernel_filter, environment_filter, pass_filter, metric_filter, unit_filter := NULL) AS TABLE
WITH
passed AS (
    SELECT * FROM observed_values_for(kernel_filter, environment_filter, pass_filter, metric_filter,
                                      unit_filter := unit_filter)
    WHERE status = 'passed'
),
-- The newest passed run per cell, implementation and provider: one pass over the runs that
-- both the newest run per implementation and the reference provider per cell are taken from.
newest AS (
    SELECT kernel, pass, workload_digest, environment_digest, protocol_digest, metric, statistic,
           unit, implementation_digest, provider,
           first(run_id ORDER BY observed_at DESC, run_id) AS run_id,
           first(value ORDER BY observed_at DESC, run_id) AS value,
           max(observed_at) AS observed_at
    FROM passed
    GROUP BY kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
             statistic, unit, implementation_digest, provider
),
latest AS (
    SELECT * FROM passed
    WHERE run_id IN (
        SELECT run_id FROM newest)
),
-- Per cell: the reference provider and the fastest implementation (kindex_reference_label,
-- kindex_fastest_implementation).
cell AS (
    SELECT kernel, pass, workload_digest, environment_digest, protocol_digest, metric, statistic,
           unit,
           kindex_reference_label(provider) AS reference_provider,
           kindex_fastest_implementation(implementation_digest, provider, value) AS fastest
    FROM newest
    GROUP BY kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
             statistic, unit
),
latest_in_version AS (
    SELECT first(run_id ORDER BY observed_at DESC, run_id) AS run_id FROM passed
    GROUP BY kernel, pass, workload_digest, environment_digest, protocol_digest, metric,
             statistic, unit, implementation_digest, provider, version
),
-- Both pairings in one join: 'latest' pairs the newest runs whatever their versions (an empty
-- version key; the newest run is also the newest of its version), 'same_version' every passed
-- run with the same version (NULL never pairs).
-- Each side carries the rule that makes it its cell's default baseline (NULL: it is not), so
-- that a query for default baselines filters the baseline side before the self-join (one
-- baseline per cell instead of every ordered pair of a leaderboard's hundreds of submissions).
sides AS (
    SELECT s.*,
           CASE WHEN s.provider = ref.reference_provider THEN 'reference'
                WHEN ref.reference_provider IS NULL
                     AND s.implementation_digest = ref.fastest.digest
                     AND s.provider = ref.fastest.label THEN 'fastest'
           END AS side_rule,
           n.ns AS noise_ns, n.class_rank, n.spread_runs, n.lowest_ns, n.highest_ns,
           n.runs AS replicate_runs, n.samples AS run_samples, n.single_timing
    FROM (
        SELECT 'latest' AS pairing, '' AS version_key, true AS latest_in_version, * FROM latest
        UNION ALL
        SELECT 'same_version' AS pairing, p.version AS version_key,
               l.run_id IS NOT NULL AS latest_in_version, p.*
        FROM passed p LEFT JOIN latest_in_version l USING (run_id)
    ) s
    JOIN cell ref
      ON  ref.kernel IS NOT DISTINCT FROM s.kernel AND ref.pass IS NOT DISTINCT FROM s.pass
      AND ref.workload_digest = s.workload_digest
      AND ref.environment_digest = s.environment_digest
      AND ref.protocol_digest = s.protocol_digest
      AND ref.metric = s.metric AND ref.statistic IS NOT DISTINCT FROM s.statistic
      AND ref.unit IS NOT DISTINCT FROM s.unit
    -- each side's noise inputs, evidence and replicates (sql/noise.sql; time-unit runs only)
    LEFT JOIN run_sides_for(environment_filter) n
           ON n.environment_digest = s.environment_digest AND n.run_id = s.run_id
)
SELECT
    b.pairing,
    b.kernel, b.operation_family, b.pass, b.gpu, b.form_factor, b.gpu_arch,
    b.environment, b.protocol_family, b.timer, b.metric, b.statistic, b.unit,
    b.shape, b.dtype, b.axes,
    c.provider AS candidate, b.provider AS baseline,
    c.implementation AS candidate_name, b.implementation AS baseline_name,
    coalesce(b.side_rule = 'reference', false) AS baseline_is_reference,
    b.side_rule AS baseline_rule,
    c.value AS candidate_value, c.p20 AS candidate_p20, c.p80 AS candidate_p80,
    b.value AS baseline_value, b.p20 AS baseline_p20, b.p80 AS baseline_p80,
    c.version AS candidate_version, b.version AS baseline_version,
    c.observed_at AS candidate_observed_at, b.observed_at AS baseline_observed_at,
    b.latest_in_version AND c.latest_in_version AS latest_in_version,
    c.replicate_runs AS candidate_runs, b.replicate_runs AS baseline_runs,
    c.run_samples AS candidate_samples, b.run_samples AS baseline_samples,
    c.single_timing AS candidate_single_timing, b.single_timing AS baseline_single_timing,
    b.workload_digest, b.environment_digest, b.protocol_digest,
    c.run_id AS candidate_run_id, b.run_id AS baseline_run_id,
    c.noise_ns AS candidate_noise_ns, c.class_rank AS candidate_class_rank,
    c.spread_runs AS candidate_spread_runs, c.lowest_ns AS candidate_lowest_ns,
    c.highest_ns AS candidate_highest_ns,
    b.noise_ns AS baseline_noise_ns, b.class_rank AS baseline_class_rank,
    b.spread_runs AS baseline_spread_runs, b.lowest_ns AS baseline_lowest_ns,
    b.highest_ns AS baseline_highest_ns
FROM sides b
JOIN sides c
  ON  b.pairing = c.pairing AND b.version_key = c.version_key
  AND b.kernel IS NOT DISTINCT FROM c.kernel AND b.pass IS NOT DISTINCT FROM c.pass
  AND b.workload_digest = c.workload_digest
  AND b.environment_digest = c.environment_digest AND b.protocol_digest = c.protocol_digest
  AND b.metric = c.metric AND b.statistic IS NOT DISTINCT FROM c.statistic
  AND b.unit IS NOT DISTINCT FROM c.unit
  -- an implementation is its digest and provider label (observations_wide_for's provider)
  AND (b.implementation_digest <> c.implementation_digest
       OR b.provider IS DISTINCT FROM c.provider);

-- The pairs with each side's noise (log half-width) and its source, from the floors of the
-- lake commit read (noise_floors): exact for that commit whatever the verb or filter.
CREATE OR REPLACE MACRO comparable_pairs_for(
    kernel_filter, environment_filter, pass_filter, metric_filter, unit_filter := NULL) AS TABLE
SELECT
    p.* EXCLUDE (candidate_noise_ns, candidate_class_rank, candidate_spread_runs,
                 candidate_lowest_ns, candidate_highest_ns, baseline_noise_ns,
                 baseline_class_rank, baseline_spread_runs, baseline_lowest_ns,
                 baseline_highest_ns),
    kindex_run_noise(candidate_noise_ns, candidate_spread_runs, candidate_lowest_ns,
                     candidate_highest_ns, candidate_class_rank, f.log_floors) AS candidate_noise,
    kindex_run_noise(baseline_noise_ns, baseline_spread_runs, baseline_lowest_ns,
                     baseline_highest_ns, baseline_class_rank, f.log_floors) AS baseline_noise,
    kindex_noise_source(candidate_spread_runs, candidate_class_rank, f.sources)
        AS candidate_noise_source,
    kindex_noise_source(baseline_spread_runs, baseline_class_rank, f.sources)
        AS baseline_noise_source
FROM pair_rows_for(kernel_filter, environment_filter, pass_filter, metric_filter,
                   unit_filter := unit_filter) p
LEFT JOIN noise_floors f USING (environment_digest);

CREATE OR REPLACE VIEW comparable_pairs AS
SELECT * FROM comparable_pairs_for(NULL, NULL, NULL, NULL);

-- Ratios with their conservative interval and verdict, for latency and for memory.
CREATE OR REPLACE MACRO kindex_verdict(lo, hi) AS
    CASE WHEN lo > 1 THEN 'faster' WHEN hi < 1 THEN 'slower' ELSE 'within noise' END;

-- Speedups (time-unit metrics): baseline / candidate. run_speedup_lo/hi is the within-run
-- interval above; speedup_lo/hi widens it by both sides' run-to-run noise (sql/views/noise.sql):
-- a side that is the newest run of its series uses the spread of its version's runs there when
-- it has several (replicates), else its environment and latency class's floor; the verdict
-- reads the widened interval, so `faster` and `slower` hold up to a rerun. evidence says what
-- the interval stands on where it matters.
CREATE OR REPLACE MACRO speedups_for(kernel_filter, environment_filter, pass_filter) AS TABLE
SELECT
    * EXCLUDE (candidate_value, candidate_p20, candidate_p80, baseline_value, baseline_p20,
               baseline_p80, candidate_noise, baseline_noise, candidate_noise_source,
               baseline_noise_source, candidate_single_timing, baseline_single_timing,
               pair_noise),
    baseline_value / candidate_value AS speedup,
    coalesce(baseline_p20, baseline_value) / coalesce(candidate_p80, candidate_value)
        AS run_speedup_lo,
    coalesce(baseline_p80, baseline_value) / coalesce(candidate_p20, candidate_value)
        AS run_speedup_hi,
    exp(pair_noise) - 1 AS noise,
    CASE WHEN candidate_noise_source = baseline_noise_source THEN candidate_noise_source
         ELSE candidate_noise_source || '/' || baseline_noise_source END AS noise_source,
    run_speedup_lo / exp(pair_noise) AS speedup_lo,
    run_speedup_hi * exp(pair_noise) AS speedup_hi,
    kindex_verdict(speedup_lo, speedup_hi) AS verdict,
    nullif(concat_ws('; ',
        CASE WHEN candidate_single_timing AND baseline_single_timing THEN 'single timing'
             WHEN candidate_single_timing THEN 'single timing: candidate'
             WHEN baseline_single_timing THEN 'single timing: baseline' END,
        CASE WHEN candidate_runs >= 2 OR baseline_runs >= 2
             THEN 'replicates ' || candidate_runs || ' vs ' || baseline_runs END), '')
        AS evidence,
    candidate_value * kindex_time_unit_ns(unit) AS candidate_ns,
    baseline_value * kindex_time_unit_ns(unit) AS baseline_ns
FROM (
    SELECT *,
           sqrt(candidate_noise * candidate_noise + baseline_noise * baseline_noise) AS pair_noise
    FROM comparable_pairs_for(kernel_filter, environment_filter, pass_filter, NULL,
                              unit_filter := kindex_time_units())
    WHERE kindex_time_unit_ns(unit) IS NOT NULL AND candidate_value > 0 AND baseline_value > 0
);

CREATE OR REPLACE VIEW speedups AS
SELECT * FROM speedups_for(NULL, NULL, NULL);

CREATE OR REPLACE MACRO memory_ratios_for(kernel_filter, environment_filter, pass_filter)
AS TABLE
SELECT
    * EXCLUDE (candidate_value, candidate_p20, candidate_p80, baseline_value, baseline_p20,
               baseline_p80, candidate_noise, baseline_noise, candidate_noise_source,
               baseline_noise_source, candidate_runs, baseline_runs, candidate_samples,
               baseline_samples, candidate_single_timing, baseline_single_timing),
    baseline_value / candidate_value AS memory_ratio,
    coalesce(baseline_p20, baseline_value) / coalesce(candidate_p80, candidate_value) AS ratio_lo,
    coalesce(baseline_p80, baseline_value) / coalesce(candidate_p20, candidate_value) AS ratio_hi,
    CASE WHEN ratio_lo > 1 THEN 'smaller' WHEN ratio_hi < 1 THEN 'larger'
         ELSE 'within noise' END AS verdict,
    candidate_value AS candidate_bytes,
    baseline_value AS baseline_bytes
FROM comparable_pairs_for(kernel_filter, environment_filter, pass_filter, 'memory')
WHERE metric = 'memory' AND candidate_value > 0 AND baseline_value > 0;

CREATE OR REPLACE VIEW memory_ratios AS
SELECT * FROM memory_ratios_for(NULL, NULL, NULL);

-- Per kernel x pass x GPU environment x metric x statistic x baseline x candidate, the newest
-- runs of every pair: the summary verb's query (sql/queries/summary.sql: the geometric mean over
-- shapes, its bootstrap interval and verdict), so that the view and `kindex query summary` say
-- the same. Metrics and statistics are never pooled: a KernelBot leaderboard's score and latency
-- cells are the same submissions measured two ways.
CREATE OR REPLACE VIEW speedup_summary AS
SELECT
    kernel, pass, gpu, form_factor, environment, environment_digest, metric, statistic,
    baseline, candidate, baseline_is_reference, baseline_rule, cases, geomean_speedup,
    min_speedup, max_speedup, share_faster, within_noise, geomean_lo, geomean_hi, verdict,
    single_timings
FROM (
-- @include queries/summary.sql {cases} = SELECT * FROM speedups WHERE pairing = 'latest'
) AS summarized;

-- History (per version and run, with the nearest baseline run): sql/views/history.sql.
-- @include views/history.sql
