-- SELECT city, COUNT(*) AS n FROM people GROUP BY city HAVING n > 1 ORDER BY n DESC LIMIT 1
WITH r AS (SELECT "city" AS k0 FROM "people" WHERE "city" IN ('A', 'B', 'D'))
SELECT k0, count(*) AS s0 FROM r GROUP BY k0
