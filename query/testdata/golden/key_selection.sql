-- SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education
WITH r AS (SELECT "education" AS k0, least(greatest("age", 17), 90) AS v2, "age" AS v3 FROM "adult")
SELECT k0, count(*) AS s0, count(*) AS s1, sum(v2) AS s2, count(v3) AS s3 FROM r GROUP BY k0
-- integer form
WITH r AS (SELECT "education" AS k0, CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 17), 90) END AS v2 FROM "adult")
SELECT k0, count(*) AS s0, count(*) AS s1, sum(v2) AS s2, count(v2) AS s3 FROM r GROUP BY k0
