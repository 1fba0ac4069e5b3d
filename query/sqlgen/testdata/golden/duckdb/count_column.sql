-- SELECT COUNT(age) FROM people
WITH r AS (SELECT "age" AS v0 FROM "people")
SELECT count(v0) AS s0 FROM r
