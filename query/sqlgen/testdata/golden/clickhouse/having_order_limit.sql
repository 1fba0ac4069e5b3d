-- SELECT city, COUNT(*) AS n FROM people GROUP BY city HAVING n > 1 ORDER BY n DESC LIMIT 1
SELECT "city" AS _dp_k0, count(*) AS _dp_s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') GROUP BY _dp_k0
