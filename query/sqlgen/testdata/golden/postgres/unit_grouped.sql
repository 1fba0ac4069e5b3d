-- SELECT day, COUNT(*), AVG(minutes_spent) FROM visits GROUP BY day
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, CASE WHEN "minutes_spent" IS NULL THEN NULL ELSE (least(greatest("minutes_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS v1 FROM "visits$raw" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, k0, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM per_unit) AS numbered WHERE rn <= 3)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0, sum(s1) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit_bounded GROUP BY k0
-- clean form
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, CASE WHEN "minutes_spent" IS NULL THEN NULL ELSE (least(greatest("minutes_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS v1 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, k0, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM per_unit) AS numbered WHERE rn <= 3)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0, sum(s1) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit_bounded GROUP BY k0
-- integer form
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, CASE WHEN "minutes_spent" IS NULL THEN NULL ELSE CAST(least(greatest("minutes_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) * CAST(1.6777216e+07 AS double precision) AS integer) END AS v1 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, k0, count(*) AS s0, sum(CAST(v1 AS bigint)) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM per_unit) AS numbered WHERE rn <= 3)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0, sum(CAST(s1 AS bigint)) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit_bounded GROUP BY k0
