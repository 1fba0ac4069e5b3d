-- SELECT city, MEDIAN(age) FROM people GROUP BY city
-- histogram 0
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM (SELECT "city" AS _dp_k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(18.0)), toFloat64(18.0)), toFloat64(100.0)), toFloat64(100.0)) - toFloat64(18.0)) / toFloat64(1.0)), 0), 0), 82), 82) AS Nullable(Int32)) AS _dp_b FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "age" IS NOT NULL) AS _dp_r GROUP BY _dp_k0, _dp_b
