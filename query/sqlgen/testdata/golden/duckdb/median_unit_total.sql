-- SELECT MEDIAN(euros_spent) FROM visits
-- histogram 0
WITH _dp_per_unit AS (SELECT _dp_u, count(*) AS _dp_n FROM (SELECT "visitor_id" AS _dp_u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS _dp_r GROUP BY _dp_u),
_dp_kept_pairs AS MATERIALIZED (SELECT _dp_u, _dp_n FROM _dp_per_unit),
_dp_kept AS (SELECT _dp_r._dp_b FROM (SELECT "visitor_id" AS _dp_u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS _dp_r JOIN (SELECT _dp_u FROM _dp_kept_pairs WHERE _dp_n <= 1) AS _dp_light ON _dp_r._dp_u = _dp_light._dp_u
UNION ALL
SELECT unnest(_dp_bs) AS _dp_b FROM (SELECT _dp_r._dp_u, min_by(_dp_r._dp_b, _dp_r._dp_rk, 1) AS _dp_bs FROM (SELECT "visitor_id" AS _dp_u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS _dp_b, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS _dp_r JOIN (SELECT _dp_u FROM _dp_kept_pairs WHERE _dp_n > 1) AS _dp_heavy ON _dp_r._dp_u = _dp_heavy._dp_u GROUP BY _dp_r._dp_u) AS _dp_sampled)
SELECT _dp_b, count(*) AS _dp_c FROM _dp_kept GROUP BY _dp_b
