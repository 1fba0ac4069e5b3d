-- SELECT COUNT(*), SUM(euros_spent) FROM visits
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS _dp_v1 FROM "visits$raw" WHERE "visitor_id" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_per_unit AS (SELECT _dp_u, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r_bounded GROUP BY _dp_u)
SELECT sum(CAST(_dp_s0 AS bigint)) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(CAST(_dp_s2 AS bigint)) AS _dp_s2 FROM _dp_per_unit
-- clean form
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS _dp_v1 FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_per_unit AS (SELECT _dp_u, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r_bounded GROUP BY _dp_u)
SELECT sum(CAST(_dp_s0 AS bigint)) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(CAST(_dp_s2 AS bigint)) AS _dp_s2 FROM _dp_per_unit
-- integer form
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) * CAST(1.6777216e+07 AS double precision) AS integer) END AS _dp_v1 FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_per_unit AS (SELECT _dp_u, count(*) AS _dp_s0, sum(CAST(_dp_v1 AS bigint)) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r_bounded GROUP BY _dp_u)
SELECT sum(CAST(_dp_s0 AS bigint)) AS _dp_s0, sum(CAST(_dp_s1 AS bigint)) AS _dp_s1, sum(CAST(_dp_s2 AS bigint)) AS _dp_s2 FROM _dp_per_unit
