-- SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag
WITH _dp_r AS (SELECT "city" AS _dp_k0, "flag" AS _dp_k1 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "flag" IN (TRUE, FALSE))
SELECT _dp_k0, _dp_k1, count(*) AS _dp_s0 FROM _dp_r GROUP BY _dp_k0, _dp_k1
