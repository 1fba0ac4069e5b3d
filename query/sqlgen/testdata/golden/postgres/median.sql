-- SELECT city, MEDIAN(age) FROM people GROUP BY city
-- histogram 0
WITH _dp_r AS (SELECT "city" AS _dp_k0, CAST(least(greatest(floor((least(greatest("age", CAST(18.0 AS double precision)), CAST(100.0 AS double precision)) - CAST(18.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 82) AS integer) AS _dp_b FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "age" IS NOT NULL)
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM _dp_r GROUP BY _dp_k0, _dp_b
