-- SELECT SUM(score) FROM people
WITH r AS (SELECT (least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) + CAST(1.00663296e+08 AS double precision) - CAST(1.00663296e+08 AS double precision)) AS v0, "score" AS v2 FROM "people$raw")
SELECT sum(v0) AS s0, count(*) AS s1, count(v2) AS s2 FROM r
-- clean form
WITH r AS (SELECT (least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) + CAST(1.00663296e+08 AS double precision) - CAST(1.00663296e+08 AS double precision)) AS v0, "score" AS v2 FROM "people")
SELECT sum(v0) AS s0, count(*) AS s1, count(v2) AS s2 FROM r
-- integer form
WITH r AS (SELECT CASE WHEN "score" IS NULL THEN NULL ELSE CAST(least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) * CAST(6.7108864e+07 AS double precision) AS integer) END AS v0 FROM "people")
SELECT sum(CAST(v0 AS bigint)) AS s0, count(*) AS s1, count(v0) AS s2 FROM r
