-- SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education
WITH r AS (SELECT "education" AS k0, least(greatest("age", 17), 90) AS v1, "age" AS v2 FROM "adult")
SELECT k0, count(*) AS s0, sum(CAST(v1 AS bigint)) AS s1, count(v2) AS s2 FROM r GROUP BY k0
-- integer form
WITH r AS (SELECT "education" AS k0, CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 17), 90) END AS v1 FROM "adult")
SELECT k0, count(*) AS s0, sum(CAST(v1 AS bigint)) AS s1, count(v1) AS s2 FROM r GROUP BY k0
