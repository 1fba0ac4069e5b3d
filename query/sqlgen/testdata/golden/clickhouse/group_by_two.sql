-- SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag
SELECT "city" AS k0, "flag" AS k1, count(*) AS s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "flag" IN (1, 0) GROUP BY k0, k1
