-- SELECT COUNT(*), SUM(euros_spent) FROM visits
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS _dp_v1, random() AS _dp_rk FROM "visits$raw" WHERE "visitor_id" IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, least(count(*), 1) AS _dp_s0, min_by(_dp_v1, _dp_rk) AS _dp_s1, nullif(least(count(_dp_v1), 1), 0) AS _dp_s2 FROM _dp_r GROUP BY _dp_u)
SELECT sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit
-- clean form
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS _dp_v1, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, least(count(*), 1) AS _dp_s0, min_by(_dp_v1, _dp_rk) AS _dp_s1, nullif(least(count(_dp_v1), 1), 0) AS _dp_s2 FROM _dp_r GROUP BY _dp_u)
SELECT sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit
-- integer form
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) * CAST(1.6777216e+07 AS DOUBLE) AS INTEGER) END AS _dp_v1, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, least(count(*), 1) AS _dp_s0, min_by(_dp_v1, _dp_rk) AS _dp_s1, nullif(least(count(_dp_v1), 1), 0) AS _dp_s2 FROM _dp_r GROUP BY _dp_u)
SELECT sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit
