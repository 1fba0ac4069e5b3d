-- SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag
WITH r AS (SELECT "city" AS k0, "flag" AS k1 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "flag" IN (TRUE, FALSE))
SELECT k0, k1, count(*) AS s0 FROM r GROUP BY k0, k1
