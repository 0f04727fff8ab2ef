-- The lake's tables, the one source of their schemas. kindex_olap.schema reads their columns and
-- types; kindex_olap.ingestion.writer creates them in its work database and inserts into them
-- (so every Parquet file has exactly these types); kindex_olap.lake writes one empty file per
-- table for a new lake, so views work before the first ingest.

CREATE TABLE runs (
    run_id                VARCHAR NOT NULL,  -- sha256 of the canonical {apiVersion, kind, spec} of the run
    name                  VARCHAR,
    title                 VARCHAR,
    display_name          VARCHAR,
    status                VARCHAR,
    observed_at           TIMESTAMP,         -- UTC
    protocol_digest       VARCHAR,
    workload_digest       VARCHAR,
    environment_digest    VARCHAR,
    implementation_digest VARCHAR,
    source                VARCHAR,
    benchmark             VARCHAR,
    external_id           VARCHAR,
    labels                MAP(VARCHAR, VARCHAR),
    version               VARCHAR,           -- labels.version, else labels.<anything>_version
    kernel                VARCHAR,
    pass                  VARCHAR,
    provider              VARCHAR,
    metric                VARCHAR,           -- the primary measurement
    statistic             VARCHAR,
    unit                  VARCHAR,
    value                 DOUBLE,
    latency_median_ns     DOUBLE,
    latency_p20_ns        DOUBLE,
    latency_p80_ns        DOUBLE,
    latency_mean_ns       DOUBLE,
    samples               BIGINT,            -- timing.samples: timed samples behind the statistics (NULL: not stated)
    source_file           VARCHAR,
    source_line           BIGINT,
    ingested_at           TIMESTAMP,
    year                  INTEGER            -- partition: year of observed_at
);

CREATE TABLE measurements (
    run_id       VARCHAR NOT NULL,
    metric       VARCHAR,
    statistic    VARCHAR,
    unit         VARCHAR,
    value        DOUBLE,
    sample_count BIGINT,
    origin       VARCHAR,  -- 'timing' (run.spec.timing) or 'measurements' (run.spec.measurements)
    source       VARCHAR,  -- partition, as in runs
    year         INTEGER
);

CREATE TABLE environments (
    environment_digest VARCHAR NOT NULL,
    name               VARCHAR,
    title              VARCHAR,
    vendor             VARCHAR,
    product            VARCHAR,
    form_factor        VARCHAR,
    architecture       VARCHAR,
    memory_bytes       BIGINT,
    gpu_count          BIGINT,
    interconnect       VARCHAR,
    operating_system   VARCHAR,
    os_kernel          VARCHAR,
    driver             VARCHAR,
    cuda_toolkit       VARCHAR,
    compiler           VARCHAR,
    framework_name     VARCHAR,
    framework_version  VARCHAR,
    libraries          MAP(VARCHAR, VARCHAR),
    clocks_locked      BOOLEAN,
    power_limit_watts  DOUBLE,
    persistence_mode   BOOLEAN,
    ecc_enabled        BOOLEAN,
    environment_variables MAP(VARCHAR, VARCHAR),
    image_digest       VARCHAR,
    spec_json          VARCHAR
);

CREATE TABLE protocols (
    protocol_digest      VARCHAR NOT NULL,
    name                 VARCHAR,
    title                VARCHAR,
    harness_name         VARCHAR,
    harness_version      VARCHAR,
    harness_repository   VARCHAR,
    harness_commit       VARCHAR,
    timer                VARCHAR,
    primary_statistic    VARCHAR,
    synchronization      VARCHAR,
    compile_included     BOOLEAN,
    setup_included       BOOLEAN,
    warmup_iterations    BIGINT,
    warmup_duration      VARCHAR,
    measured_iterations  BIGINT,
    samples              BIGINT,
    input_regeneration   VARCHAR,
    outlier_policy       VARCHAR,
    correctness_reference  VARCHAR,
    correctness_comparator VARCHAR,
    clocks_locked        BOOLEAN,
    power_limit_watts    DOUBLE,
    persistence_mode     BOOLEAN,
    comparability_family VARCHAR,
    comparability_notes  VARCHAR,
    spec_json            VARCHAR
);

CREATE TABLE workloads (
    workload_digest       VARCHAR NOT NULL,
    name                  VARCHAR,
    title                 VARCHAR,
    operation             VARCHAR,  -- labels.operation, else the OperationSpec's name
    operation_spec_digest VARCHAR,
    dtype                 VARCHAR,  -- labels.dtype, else the single dtype of the tensors
    shape                 VARCHAR,  -- labels.shape: a human label such as batch16-seq1024-vocab128256-bf16
    axes                  MAP(VARCHAR, DOUBLE),  -- numeric axes of spec.axes
    axes_json             VARCHAR,  -- spec.axes as JSON (all values)
    labels                MAP(VARCHAR, VARCHAR),
    spec_json             VARCHAR
);

CREATE TABLE implementations (
    implementation_digest VARCHAR NOT NULL,
    name                  VARCHAR,
    title                 VARCHAR,
    provider              VARCHAR,  -- labels.provider (e.g. liger, torch)
    display_name          VARCHAR,  -- labels.display, else the title
    operation             VARCHAR,
    operation_spec_digest VARCHAR,
    language              VARCHAR,
    repository            VARCHAR,
    version               VARCHAR,
    labels                MAP(VARCHAR, VARCHAR),
    spec_json             VARCHAR
);

CREATE TABLE operations (
    operation_spec_digest VARCHAR NOT NULL,
    name                  VARCHAR,
    title                 VARCHAR,
    family                VARCHAR,
    labels                MAP(VARCHAR, VARCHAR),
    spec_json             VARCHAR
);

-- Where a run's numbers came from (RunProvenance documents, kindex's own kind): kept beside the
-- runs so that run documents and their identities stay what KernelIndex builds. A run may have
-- several rows (one per source that says something about it).
CREATE TABLE run_provenance (
    provenance_digest VARCHAR NOT NULL,  -- sha256 of the RunProvenance document
    run_id            VARCHAR NOT NULL,  -- the run it describes (runs.run_id)
    source            VARCHAR,           -- what said so, e.g. Liger's benchmark CSV history
    git_commit        VARCHAR,           -- the git commit that first held the run's numbers
    on_main           BOOLEAN,           -- that commit is on the main branch's history
    first_seen_at     TIMESTAMP          -- UTC
);

CREATE TABLE rejects (
    source_file VARCHAR,
    line        BIGINT,   -- 1-based line of a JSONL document; NULL for whole-file documents
    reason      VARCHAR,
    text        VARCHAR,  -- the document as read, cut to its first 64 KiB (KEEP_REJECTED_BYTES)
    rejected_at TIMESTAMP
);

CREATE TABLE ingested_files (
    path        VARCHAR,
    size        BIGINT,
    mtime_ns    BIGINT,
    sha256      VARCHAR,
    documents   BIGINT,
    rejected    BIGINT,
    ingested_at TIMESTAMP
);

-- Serving runs (MLPerf inference and the like, from KernelIndex exports): not kernel runs, so
-- kept apart from runs; one row per ServingRun manifest, its measurements as a list.
CREATE TABLE serving_runs (
    run_digest            VARCHAR NOT NULL,  -- the export's runDigest of the ServingRun manifest
    name                  VARCHAR,
    title                 VARCHAR,
    status                VARCHAR,
    observed_at           TIMESTAMP,         -- UTC
    source                VARCHAR,
    benchmark             VARCHAR,           -- e.g. llama2-70b-99
    external_id           VARCHAR,
    division              VARCHAR,
    category              VARCHAR,
    scenario              VARCHAR,
    harness_name          VARCHAR,
    harness_version       VARCHAR,
    quality_policy        VARCHAR,
    model                 VARCHAR,
    model_digest          VARCHAR,
    workload              VARCHAR,
    workload_digest       VARCHAR,
    configuration         VARCHAR,
    configuration_digest  VARCHAR,
    dtype                 VARCHAR,
    quantization          VARCHAR,
    tensor_parallel       BIGINT,
    stack                 VARCHAR,
    accelerator_vendor    VARCHAR,
    accelerator_model     VARCHAR,
    accelerators_per_node BIGINT,
    node_count            BIGINT,
    total_accelerators    BIGINT,
    metric                VARCHAR,           -- the primary (first) measurement
    statistic             VARCHAR,
    unit                  VARCHAR,
    value                 DOUBLE,
    measurements          STRUCT(metric VARCHAR, statistic VARCHAR, unit VARCHAR, value DOUBLE,
                                 sample_count BIGINT)[],
    digest_verified       BOOLEAN,           -- the manifest's digest recomputes to run_digest
    kernelindex_id        VARCHAR,
    kernelindex_export    VARCHAR,
    spec_json             VARCHAR,
    ingested_at           TIMESTAMP
);

-- Layers (issue 21): what the verdicts need that depends only on the runs of one series or
-- environment, computed once per lake commit by kindex_olap.layers from the views of the same
-- name (sql/views/noise.sql) and written by the same lake commit as the runs they come from.
-- An ingest recomputes the environments it touched (the tables are partitioned by
-- environment_digest), of those the kernels it touched where it touched some (a kernel's rows
-- depend on its runs only: kindex_olap.layers.cells), and the noise floors whole; verdicts,
-- widened intervals and q-values are computed from them at read time. A lake commit that
-- records no layer (a lake written before them) is read with the same views computed live.

-- run_code_for: the code each passed run measured.
CREATE TABLE layer_run_code (
    run_id             VARCHAR NOT NULL,
    environment_digest VARCHAR,
    declared_code      VARCHAR,  -- label kindex_code, else git commit, else kindex_invocation
    code_key           VARCHAR   -- version @ code (or invocation number): same key, same code
);

-- replicate_pairs_for: neighbouring runs of one series under one version label.
CREATE TABLE layer_replicate_pairs (
    kernel                VARCHAR,
    pass                  VARCHAR,
    provider              VARCHAR,
    version               VARCHAR,
    metric                VARCHAR,
    statistic             VARCHAR,
    unit                  VARCHAR,
    workload_digest       VARCHAR,
    environment_digest    VARCHAR,
    protocol_digest       VARCHAR,
    implementation_digest VARCHAR,
    previous_run_id       VARCHAR,
    run_id                VARCHAR,
    previous_observed_at  TIMESTAMP,
    observed_at           TIMESTAMP,
    previous_ns           DOUBLE,
    ns                    DOUBLE,
    previous_p20_ns       DOUBLE,
    previous_p80_ns       DOUBLE,
    p20_ns                DOUBLE,
    p80_ns                DOUBLE,
    same_code             BOOLEAN,
    log_change            DOUBLE,
    class_rank            INTEGER
);

-- replicate_spread_for: the newest run of each series and the spread of its code's runs.
CREATE TABLE layer_replicate_spread (
    environment_digest VARCHAR,
    run_id             VARCHAR,
    runs               BIGINT,
    lowest_ns          DOUBLE,
    highest_ns         DOUBLE
);

-- noise_model_for(NULL): the floors per environment and latency class (a few rows per GPU;
-- recomputed whole by every lake commit: pooled floors depend on every environment).
CREATE TABLE layer_noise_model (
    environment_digest VARCHAR,
    gpu                VARCHAR,
    form_factor        VARCHAR,
    environment        VARCHAR,
    class_rank         INTEGER,
    latency_class      VARCHAR,
    lower_ns           DOUBLE,
    upper_ns           DOUBLE,
    pairs              BIGINT,
    measured_floor     DOUBLE,
    median_change      DOUBLE,
    pooled_pairs       BIGINT,
    pooled_floor       DOUBLE,
    label_pairs        BIGINT,
    label_floor        DOUBLE,
    floor              DOUBLE,
    source             VARCHAR
);

-- pair_rows_for: every comparable pair of runs of a cell (pairing latest and same_version), with
-- each side's noise inputs; the noise itself reads the floors at read time (views.sql
-- comparable_pairs_for).
CREATE TABLE layer_pairs (
    pairing                 VARCHAR,
    kernel                  VARCHAR,
    operation_family        VARCHAR,
    pass                    VARCHAR,
    gpu                     VARCHAR,
    form_factor             VARCHAR,
    gpu_arch                VARCHAR,
    environment             VARCHAR,
    protocol_family         VARCHAR,
    timer                   VARCHAR,
    metric                  VARCHAR,
    statistic               VARCHAR,
    unit                    VARCHAR,
    shape                   VARCHAR,
    dtype                   VARCHAR,
    axes                    MAP(VARCHAR, DOUBLE),
    candidate               VARCHAR,
    baseline                VARCHAR,
    candidate_name          VARCHAR,
    baseline_name           VARCHAR,
    baseline_is_reference   BOOLEAN,
    baseline_rule           VARCHAR,
    candidate_value         DOUBLE,
    candidate_p20           DOUBLE,
    candidate_p80           DOUBLE,
    baseline_value          DOUBLE,
    baseline_p20            DOUBLE,
    baseline_p80            DOUBLE,
    candidate_version       VARCHAR,
    baseline_version        VARCHAR,
    candidate_observed_at   TIMESTAMP,
    baseline_observed_at    TIMESTAMP,
    latest_in_version       BOOLEAN,
    candidate_runs          BIGINT,
    baseline_runs           BIGINT,
    candidate_samples       BIGINT,
    baseline_samples        BIGINT,
    candidate_single_timing BOOLEAN,
    baseline_single_timing  BOOLEAN,
    workload_digest         VARCHAR,
    environment_digest      VARCHAR,
    protocol_digest         VARCHAR,
    candidate_run_id        VARCHAR,
    baseline_run_id         VARCHAR,
    candidate_noise_ns      DOUBLE,
    candidate_class_rank    INTEGER,
    candidate_spread_runs   BIGINT,
    candidate_lowest_ns     DOUBLE,
    candidate_highest_ns    DOUBLE,
    baseline_noise_ns       DOUBLE,
    baseline_class_rank     INTEGER,
    baseline_spread_runs    BIGINT,
    baseline_lowest_ns      DOUBLE,
    baseline_highest_ns     DOUBLE
);

-- history_point_rows_for(env, false): the points of every history series (one code of one
-- implementation in one cell, its runs pooled), main-branch runs, with each series' change
-- points in version order (kindex_olap.layers.points). Read by stored_history_points()
-- (sql/views/history.sql), which hashes the series and cell keys back.
CREATE TABLE layer_points (
    point_key              VARCHAR,
    code_key               VARCHAR,
    kernel                 VARCHAR,
    pass                   VARCHAR,
    gpu                    VARCHAR,
    form_factor            VARCHAR,
    environment            VARCHAR,
    shape                  VARCHAR,
    dtype                  VARCHAR,
    axes                   MAP(VARCHAR, DOUBLE),
    metric                 VARCHAR,
    environment_digest     VARCHAR,
    statistic              VARCHAR,
    unit                   VARCHAR,
    workload_digest        VARCHAR,
    protocol_digest        VARCHAR,
    implementation_digest  VARCHAR,
    provider               VARCHAR,
    implementation         VARCHAR,
    baseline               VARCHAR,
    baseline_rule          VARCHAR,
    is_baseline            BOOLEAN,
    version                VARCHAR,
    run_id                 VARCHAR,
    runs                   BIGINT,
    median_ns              DOUBLE,
    p20_ns                 DOUBLE,
    p80_ns                 DOUBLE,
    min_ns                 DOUBLE,
    max_ns                 DOUBLE,
    log_mean               DOUBLE,
    log_sd                 DOUBLE,
    baseline_ns            DOUBLE,
    baseline_min_ns        DOUBLE,
    invocation_baseline_ns DOUBLE,
    baseline_digest        VARCHAR,
    baseline_digests       BIGINT,
    declared_code          VARCHAR,
    baseline_max_ns        DOUBLE,
    baseline_log_mean      DOUBLE,
    speedup_runs           BIGINT,
    speedup                DOUBLE,
    speedup_min            DOUBLE,
    speedup_max            DOUBLE,
    speedup_log_mean       DOUBLE,
    speedup_log_sd         DOUBLE,
    first_observed         TIMESTAMP,
    last_observed          TIMESTAMP,
    baseline_observed_at   TIMESTAMP,
    commits                VARCHAR,
    run_ids                VARCHAR[],
    cp_latency_pvalue      DOUBLE,
    cp_speedup_pvalue      DOUBLE,
    quiet_latency_pvalue   DOUBLE,
    quiet_speedup_pvalue   DOUBLE
);

-- The summary of every default pair (every implementation against its cell's baseline, newest
-- runs: sql/queries/summary.sql over them), computed whole by every lake commit from its other
-- layers (kindex_olap.layers.summary): the floors it reads depend on the whole lake.
CREATE TABLE layer_summary (
    kernel             VARCHAR,
    pass               VARCHAR,
    gpu                VARCHAR,
    form_factor        VARCHAR,
    environment        VARCHAR,
    environment_digest VARCHAR,
    metric             VARCHAR,
    statistic          VARCHAR,
    baseline           VARCHAR,
    candidate          VARCHAR,
    baseline_name      VARCHAR,
    candidate_name     VARCHAR,
    baseline_is_reference BOOLEAN,
    baseline_rule      VARCHAR,
    cases              BIGINT,
    min_speedup        DOUBLE,
    max_speedup        DOUBLE,
    share_faster       DOUBLE,
    within_noise       BIGINT,
    single_timings     BIGINT,
    geomean_speedup    DOUBLE,
    geomean_lo         DOUBLE,
    geomean_hi         DOUBLE,
    verdict            VARCHAR
);

-- The speedups of every default pair (every implementation against its cell's baseline, the
-- newest runs: views.sql speedups_for with the pairs' default filters), with their widened
-- intervals and verdicts, computed whole by every lake commit from its other layers
-- (kindex_olap.layers.summary), as the summary is: the floors they read depend on the whole
-- lake. `speedup` with the default pairing reads it (query/compile.py).
CREATE TABLE layer_speedups (
    pairing               VARCHAR,
    kernel                VARCHAR,
    operation_family      VARCHAR,
    pass                  VARCHAR,
    gpu                   VARCHAR,
    form_factor           VARCHAR,
    gpu_arch              VARCHAR,
    environment           VARCHAR,
    protocol_family       VARCHAR,
    timer                 VARCHAR,
    metric                VARCHAR,
    statistic             VARCHAR,
    unit                  VARCHAR,
    shape                 VARCHAR,
    dtype                 VARCHAR,
    axes                  MAP(VARCHAR, DOUBLE),
    candidate             VARCHAR,
    baseline              VARCHAR,
    candidate_name        VARCHAR,
    baseline_name         VARCHAR,
    baseline_is_reference BOOLEAN,
    baseline_rule         VARCHAR,
    candidate_version     VARCHAR,
    baseline_version      VARCHAR,
    candidate_observed_at TIMESTAMP,
    baseline_observed_at  TIMESTAMP,
    latest_in_version     BOOLEAN,
    candidate_runs        BIGINT,
    baseline_runs         BIGINT,
    candidate_samples     BIGINT,
    baseline_samples      BIGINT,
    workload_digest       VARCHAR,
    environment_digest    VARCHAR,
    protocol_digest       VARCHAR,
    candidate_run_id      VARCHAR,
    baseline_run_id       VARCHAR,
    speedup               DOUBLE,
    run_speedup_lo        DOUBLE,
    run_speedup_hi        DOUBLE,
    noise                 DOUBLE,
    noise_source          VARCHAR,
    speedup_lo            DOUBLE,
    speedup_hi            DOUBLE,
    verdict               VARCHAR,
    evidence              VARCHAR,
    candidate_ns          DOUBLE,
    baseline_ns           DOUBLE
);

-- Layer: every step of every history series tested on its own (latency and speedup steps in
-- version order, main-branch runs), one row per test the lake's Benjamini-Hochberg correction
-- counts (kindex_olap.layers.step_tests): test 'step' (a step's change, its p-value from the
-- two points' noise) or 'change point' (a tested step where a change point starts, or a series
-- tested for change points without one: its strongest split). Depends on each series and its
-- environment's floors only; query/correction.py corrects over every row at read time, so a
-- question about a few series judges them as the whole lake would. No series key: it is a hash
-- (UBIGINT), which Delta cannot hold (layer_points hashes its keys at read time); the
-- correction needs only each family's p-values.
CREATE TABLE layer_step_tests (
    environment_digest VARCHAR,
    kernel             VARCHAR,  -- the series' (an ingest keeps the kernels it did not touch)
    series             VARCHAR,
    test               VARCHAR,
    pvalue             DOUBLE
);

-- Layer: every step of every history series (latency and speedup, main-branch runs, version
-- order) with what a row of the step verbs shows (query/history_report.py STEP_COLUMNS) and
-- what its verdict reads, but not the verdict: that depends on the rules asked (threshold,
-- q level) and on the whole lake (the q-value, from layer_step_tests' correction), so it is
-- computed at read time from these columns (query/stored_steps.py). Written with the step
-- tests, from the same tests (kindex_olap.layers.step_tests), per environment. `regressions`,
-- `improvements`, `changes` and `kindex check` read the steps they show from it instead of
-- reading their series' points and testing them again. to_ingested: when the later point's
-- newest run was ingested (a check of new runs reads the steps ingested since the earliest of
-- them: kindex_olap.lake.tables sorts the partition's newest ingest first).
CREATE TABLE layer_steps (
    environment_digest VARCHAR,
    kernel             VARCHAR,
    pass               VARCHAR,
    gpu                VARCHAR,
    shape              VARCHAR,
    dtype              VARCHAR,
    axes               MAP(VARCHAR, DOUBLE),
    provider           VARCHAR,
    version            VARCHAR,
    is_baseline        BOOLEAN,
    run_ids            VARCHAR[],
    series_order       BIGINT,
    point_index        BIGINT,
    series             VARCHAR,
    from_version       VARCHAR,
    from_value         DOUBLE,
    to_value           DOUBLE,
    ratio              DOUBLE,
    ratio_lo           DOUBLE,
    ratio_hi           DOUBLE,
    rule               VARCHAR,
    from_commits       VARCHAR,
    to_commits         VARCHAR,
    to_observed        TIMESTAMP,
    step               VARCHAR,
    log_change         DOUBLE,
    se                 DOUBLE,
    base_change        DOUBLE,
    judged             BOOLEAN,
    comparable         BOOLEAN,
    changepoint        BOOLEAN,
    cp_pvalue          DOUBLE,
    to_ingested        TIMESTAMP,
    implementation_name VARCHAR
);
