-- SELECT SUM(age), AVG(age) FROM people
WITH r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 18), 100) END AS v0 FROM "people")
SELECT sum(v0) AS s0, count(v0) AS s1 FROM r
