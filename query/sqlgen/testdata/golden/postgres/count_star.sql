-- SELECT COUNT(*) FROM people
WITH r AS (SELECT 1 AS one FROM "people")
SELECT count(*) AS s0 FROM r
