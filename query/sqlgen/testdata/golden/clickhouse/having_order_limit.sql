-- SELECT city, COUNT(*) AS n FROM people GROUP BY city HAVING n > 1 ORDER BY n DESC LIMIT 1
SELECT "city" AS k0, count(*) AS s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') GROUP BY k0
