-- SELECT COUNT(*), SUM(euros_spent) FROM visits
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS v1 FROM "visits$raw" WHERE "visitor_id" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u)
SELECT sum(CAST(s0 AS bigint)) AS s0, sum(s1) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit
-- clean form
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) + CAST(4.02653184e+08 AS double precision) - CAST(4.02653184e+08 AS double precision)) END AS v1 FROM "visits" WHERE "visitor_id" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u)
SELECT sum(CAST(s0 AS bigint)) AS s0, sum(s1) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit
-- integer form
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) * CAST(1.6777216e+07 AS double precision) AS integer) END AS v1 FROM "visits" WHERE "visitor_id" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, count(*) AS s0, sum(CAST(v1 AS bigint)) AS s1, count(v1) AS s2 FROM r_bounded GROUP BY u)
SELECT sum(CAST(s0 AS bigint)) AS s0, sum(CAST(s1 AS bigint)) AS s1, sum(CAST(s2 AS bigint)) AS s2 FROM per_unit
