-- The views that read a lake commit's layers (sql/schema/tables.sql: layer_*) instead of
-- computing them: kindex_olap.query.engine runs this file after views/views.sql when the lake
-- commit recorded the layers. The columns are the live views' own, in their order, so every
-- view and macro built on these names reads the same rows either way (tests/test_layers.py).

CREATE OR REPLACE VIEW run_code AS
SELECT * FROM layer_run_code;

CREATE OR REPLACE VIEW replicate_pairs AS
SELECT * FROM layer_replicate_pairs;

CREATE OR REPLACE VIEW replicate_spread AS
SELECT * FROM layer_replicate_spread;

CREATE OR REPLACE VIEW noise_model AS
SELECT * FROM layer_noise_model;

-- The stored pairs, filtered as the live macro filters (every filter is a comparability key).
CREATE OR REPLACE MACRO pair_rows_for(
    kernel_filter, environment_filter, pass_filter, metric_filter, unit_filter := NULL) AS TABLE
SELECT * FROM layer_pairs
WHERE (kernel_filter IS NULL OR list_contains(kernel_filter, kernel))
  AND (environment_filter IS NULL OR list_contains(environment_filter, environment_digest))
  AND (pass_filter IS NULL OR list_contains(pass_filter, pass))
  AND (metric_filter IS NULL OR metric = metric_filter)
  AND (unit_filter IS NULL OR list_contains(unit_filter, unit));
