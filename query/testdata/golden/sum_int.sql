-- SELECT SUM(age) FROM people
WITH r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 18), 100) END AS v0 FROM "people")
SELECT sum(v0) AS s0 FROM r
