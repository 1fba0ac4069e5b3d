-- SELECT city, MEDIAN(age) FROM people GROUP BY city
-- histogram 0
WITH r AS (SELECT "city" AS k0, CAST(least(greatest(floor((least(greatest("age", CAST(18.0 AS double precision)), CAST(100.0 AS double precision)) - CAST(18.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 82) AS integer) AS b FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "age" IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
