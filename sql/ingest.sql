-- Flatten one batch of staged runs into the ingest's work tables runs and measurements (written
-- to Parquet, sorted, once at the end of the ingest).
-- Inputs (set by kindex_olap.etl): staging_files (NDJSON written by the validator: one line per
-- valid run, {"k": facts kindex computed, "r": the BenchmarkRun document}) and runs_files (the
-- committed lake's runs, to skip runs already stored; runs staged by earlier batches of this
-- ingest are skipped too). Statements run in order, split on ';'.

CREATE OR REPLACE TEMP TABLE staged AS
SELECT k.*, r.metadata AS meta, r.spec AS spec
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
                                 measurements STRUCT(metric VARCHAR, unit VARCHAR, statistic VARCHAR,
                                                     value DOUBLE, sampleCount BIGINT)[],
                                 sourceNative STRUCT(source VARCHAR, benchmark VARCHAR,
                                                     externalId VARCHAR)))'
    }
)
QUALIFY row_number() OVER (PARTITION BY k.run_id ORDER BY k.seq) = 1;

CREATE OR REPLACE TEMP TABLE fresh AS
SELECT s.*
FROM staged AS s
WHERE NOT EXISTS (
    SELECT 1 FROM read_parquet(getvariable('runs_files')) AS e WHERE e.run_id = s.run_id
)
AND NOT EXISTS (SELECT 1 FROM runs AS earlier WHERE earlier.run_id = s.run_id);

INSERT INTO runs BY NAME
SELECT
    run_id,
    meta.name AS name,
    meta.title AS title,
    display AS display_name,
    spec.status AS status,
    make_timestamp(observed_us) AS observed_at,
    spec.protocolDigest AS protocol_digest,
    spec.workloadDigest AS workload_digest,
    spec.environmentDigest AS environment_digest,
    spec.implementationDigest AS implementation_digest,
    source,
    spec.sourceNative.benchmark AS benchmark,
    spec.sourceNative.externalId AS external_id,
    meta.labels AS labels,
    version,
    kernel,
    pass,
    provider,
    metric,
    statistic,
    unit,
    value,
    lat['median']::DOUBLE AS latency_median_ns,
    coalesce(lat['p20']::DOUBLE, p20) AS latency_p20_ns,
    coalesce(lat['p80']::DOUBLE, p80) AS latency_p80_ns,
    lat['mean']::DOUBLE AS latency_mean_ns,
    src AS source_file,
    line AS source_line,
    getvariable('ingested_at')::TIMESTAMP AS ingested_at,
    year
FROM fresh;

INSERT INTO measurements BY NAME
SELECT run_id, metric, statistic, unit, value, sample_count, origin, source, year
FROM (
    SELECT run_id, 'latency' AS metric, e.key AS statistic, 'ns' AS unit, e.value::DOUBLE AS value,
           NULL::BIGINT AS sample_count, 'timing' AS origin, source, year, kernel
    FROM (SELECT run_id, source, year, kernel, unnest(map_entries(lat)) AS e FROM fresh)
    UNION ALL
    SELECT run_id, m.metric, m.statistic, m.unit, m.value, m.sampleCount, 'measurements',
           source, year, kernel
    FROM (SELECT run_id, source, year, kernel, unnest(spec.measurements) AS m FROM fresh)
);
