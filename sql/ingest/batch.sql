-- Ingest step 1, once per batch: flatten a batch of staged runs into the work table staged_runs
-- (ingest/work_tables.sql), in one pass. Loaded by kindex_olap.ingestion.writer (stage), which
-- sets staging_files: NDJSON written by the validator, one line per valid run,
-- {"k": facts kindex computed, "r": the BenchmarkRun document}. Duplicates (within the ingest
-- and against the lake) are removed once, at the end (ingest/finish.sql), not per batch.
--
-- The staging processes compute only what needs the document's origin or exact Python
-- semantics (identity, sequence, file, line, display name, observed time, latency in ns); the
-- names, version label and headline value are derived here, vectorized, as the SQL twin of
-- kindex_olap.model.facts (parse_names, version_label, primary_measurement, _measured): a
-- test compares the two on every corpus (tests/test_ingest_facts.py).

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
    coalesce(r.spec.sourceNative.source, 'unknown') AS source,
    bench AS benchmark,
    ext AS external_id,
    r.metadata.labels AS labels,
    CASE
        WHEN map_contains(r.metadata.labels, 'version') THEN r.metadata.labels['version']
        ELSE r.metadata.labels[
            list_sort(list_filter(map_keys(r.metadata.labels), lambda key: suffix(key, '_version')))[1]
        ]
    END AS version,
    CASE WHEN named THEN nullif(split_part(bench, '/', 1), '') END AS kernel,
    CASE
        WHEN named AND (liger_shaped OR coalesce(ext, '') = '')
        THEN nullif(split_part(bench, '/', 2), '')
    END AS pass,
    CASE
        WHEN NOT (named AND liger_shaped) THEN NULL
        -- kindex's Liger importer puts `memory` before the provider of a memory run
        WHEN NOT primary_timed AND r.spec.measurements[1].metric = 'memory'
             AND starts_with(ext, bench || '/memory/')
        THEN nullif(split_part(ext[length(bench) + 9:], '/', 1), '')
        ELSE nullif(split_part(ext[length(bench) + 2:], '/', 1), '')
    END AS provider,
    CASE WHEN primary_timed THEN 'latency' ELSE r.spec.measurements[1].metric END AS metric,
    CASE WHEN primary_timed THEN primary_stat ELSE r.spec.measurements[1].statistic END AS statistic,
    CASE WHEN primary_timed THEN 'ns' ELSE r.spec.measurements[1].unit END AS unit,
    CASE WHEN primary_timed THEN k.lat[primary_stat]::DOUBLE ELSE r.spec.measurements[1].value END
        AS value,
    k.lat['median']::DOUBLE AS latency_median_ns,
    coalesce(k.lat['p20']::DOUBLE, latency_measured(r.spec.measurements, 'p20')) AS latency_p20_ns,
    coalesce(k.lat['p80']::DOUBLE, latency_measured(r.spec.measurements, 'p80')) AS latency_p80_ns,
    k.lat['mean']::DOUBLE AS latency_mean_ns,
    r.spec.timing.samples AS samples,
    k.src AS source_file,
    k.line AS source_line,
    getvariable('ingested_at')::TIMESTAMP AS ingested_at,
    k.year,
    k.lat AS timing,
    r.spec.measurements AS spec_measurements
FROM (
    SELECT
        *,
        r.spec.sourceNative.benchmark AS bench,
        r.spec.sourceNative.externalId AS ext,
        coalesce(bench, '') <> '' AS named,
        -- KernelIndex's Liger importer writes externalId as benchmark/provider/gpu/shape/time
        coalesce(ext, '') <> '' AND starts_with(ext, bench || '/') AS liger_shaped,
        r.spec.timing.primaryStatistic AS primary_stat,
        coalesce(map_contains(k.lat, primary_stat), false) AS primary_timed
    FROM read_ndjson(
        getvariable('staging_files'),
        format = 'newline_delimited',
        columns = {
            'k': 'STRUCT(run_id VARCHAR, seq BIGINT, src VARCHAR, line BIGINT, display VARCHAR,
                         observed_us BIGINT, year INTEGER, lat MAP(VARCHAR, BIGINT))',
            'r': 'STRUCT(metadata STRUCT(name VARCHAR, title VARCHAR, labels MAP(VARCHAR, VARCHAR)),
                         spec STRUCT(status VARCHAR, protocolDigest VARCHAR, workloadDigest VARCHAR,
                                     environmentDigest VARCHAR, implementationDigest VARCHAR,
                                     timing STRUCT(primaryStatistic VARCHAR, samples BIGINT),
                                     measurements STRUCT(metric VARCHAR, unit VARCHAR,
                                                         statistic VARCHAR, value DOUBLE,
                                                         sampleCount BIGINT)[],
                                     sourceNative STRUCT(source VARCHAR, benchmark VARCHAR,
                                                         externalId VARCHAR)))'
        }
    )
);
