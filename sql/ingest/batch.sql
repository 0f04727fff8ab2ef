-- Ingest step 1, once per batch: flatten a batch of staged runs into the work table staged_runs
-- (ingest/work_tables.sql), in one pass. Loaded by kindex_olap.ingestion.writer (stage), which
-- sets staging_files: NDJSON written by the validator, one line per valid run,
-- {"k": facts kindex computed, "r": the BenchmarkRun document}. Duplicates (within the ingest
-- and against the lake) are removed once, at the end (ingest/finish.sql), not per batch.

INSERT INTO staged_runs BY NAME
SELECT
    k.run_id,
    k.seq,
    r.metadata.name AS name,
    r.metadata.title AS title,
    k.display AS display_name,
    r.spec.status AS status,
    make_timestamp(k.observed_us) AS observed_at,
    r.spec.protocolDigest AS protocol_digest,
    r.spec.workloadDigest AS workload_digest,
    r.spec.environmentDigest AS environment_digest,
    r.spec.implementationDigest AS implementation_digest,
    k.source,
    r.spec.sourceNative.benchmark AS benchmark,
    r.spec.sourceNative.externalId AS external_id,
    r.metadata.labels AS labels,
    k.version,
    k.kernel,
    k.pass,
    k.provider,
    k.metric,
    k.statistic,
    k.unit,
    k.value,
    k.lat['median']::DOUBLE AS latency_median_ns,
    coalesce(k.lat['p20']::DOUBLE, k.p20) AS latency_p20_ns,
    coalesce(k.lat['p80']::DOUBLE, k.p80) AS latency_p80_ns,
    k.lat['mean']::DOUBLE AS latency_mean_ns,
    r.spec.timing.samples AS samples,
    k.src AS source_file,
    k.line AS source_line,
    getvariable('ingested_at')::TIMESTAMP AS ingested_at,
    k.year,
    k.lat AS timing,
    r.spec.measurements AS spec_measurements
FROM read_ndjson(
    getvariable('staging_files'),
    format = 'newline_delimited',
    columns = {
        'k': 'STRUCT(run_id VARCHAR, seq BIGINT, src VARCHAR, line BIGINT, display VARCHAR,
                     observed_us BIGINT, year INTEGER, source VARCHAR, kernel VARCHAR, pass VARCHAR,
                     provider VARCHAR, version VARCHAR, lat MAP(VARCHAR, BIGINT), metric VARCHAR,
                     statistic VARCHAR, unit VARCHAR, value DOUBLE, p20 DOUBLE, p80 DOUBLE)',
        'r': 'STRUCT(metadata STRUCT(name VARCHAR, title VARCHAR, labels MAP(VARCHAR, VARCHAR)),
                     spec STRUCT(status VARCHAR, protocolDigest VARCHAR, workloadDigest VARCHAR,
                                 environmentDigest VARCHAR, implementationDigest VARCHAR,
                                 timing STRUCT(samples BIGINT),
                                 measurements STRUCT(metric VARCHAR, unit VARCHAR, statistic VARCHAR,
                                                     value DOUBLE, sampleCount BIGINT)[],
                                 sourceNative STRUCT(source VARCHAR, benchmark VARCHAR,
                                                     externalId VARCHAR)))'
    }
);
