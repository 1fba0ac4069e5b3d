-- SELECT SUM(age), AVG(age) FROM people
WITH r AS (SELECT least(greatest("age", 18), 100) AS v0, "age" AS v2 FROM "people")
SELECT sum(CAST(v0 AS bigint)) AS s0, count(*) AS s1, count(v2) AS s2 FROM r
-- integer form
WITH r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 18), 100) END AS v0 FROM "people")
SELECT sum(CAST(v0 AS bigint)) AS s0, count(*) AS s1, count(v0) AS s2 FROM r
