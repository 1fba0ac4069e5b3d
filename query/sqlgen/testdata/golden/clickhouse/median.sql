-- SELECT city, MEDIAN(age) FROM people GROUP BY city
-- histogram 0
SELECT k0, b, count(*) AS c FROM (SELECT "city" AS k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(18.0)), toFloat64(18.0)), toFloat64(100.0)), toFloat64(100.0)) - toFloat64(18.0)) / toFloat64(1.0)), 0), 0), 82), 82) AS Nullable(Int32)) AS b FROM "people" WHERE "city" IN ('A', 'B', 'D') AND "age" IS NOT NULL) AS r GROUP BY k0, b
