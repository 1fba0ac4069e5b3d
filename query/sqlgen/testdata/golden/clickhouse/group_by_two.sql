-- SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag
SELECT "city" AS _dp_k0, "flag" AS _dp_k1, count(*) AS _dp_s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "flag" IN (1, 0) GROUP BY _dp_k0, _dp_k1
