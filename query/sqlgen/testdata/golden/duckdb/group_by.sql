-- SELECT city, COUNT(*), AVG(score) FROM people GROUP BY city
WITH r AS (SELECT "city" AS k0, (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS v1, "score" AS v2 FROM "people$raw" WHERE "city" IN ('A', 'B', 'D'))
SELECT k0, count(*) AS s0, sum(v1) AS s1, count(v2) AS s2 FROM r GROUP BY k0
-- clean form
WITH r AS (SELECT "city" AS k0, (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS v1, "score" AS v2 FROM "people" WHERE "city" IN ('A', 'B', 'D'))
SELECT k0, count(*) AS s0, sum(v1) AS s1, count(v2) AS s2 FROM r GROUP BY k0
-- integer form
WITH r AS (SELECT "city" AS k0, CASE WHEN "score" IS NULL THEN NULL ELSE CAST(least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) * CAST(6.7108864e+07 AS DOUBLE) AS INTEGER) END AS v1 FROM "people" WHERE "city" IN ('A', 'B', 'D'))
SELECT k0, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r GROUP BY k0
