-- SELECT education, MEDIAN(age) FROM adult GROUP BY education
SELECT "education" AS k0, count(*) AS s0, count(("age")) AS s1 FROM "adult" GROUP BY k0
-- histogram 0
SELECT k0, b, count(*) AS c FROM (SELECT "education" AS k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(17.0)), toFloat64(17.0)), toFloat64(90.0)), toFloat64(90.0)) - toFloat64(17.0)) / toFloat64(1.0)), 0), 0), 73), 73) AS Nullable(Int32)) AS b FROM "adult" WHERE "age" IS NOT NULL) AS r GROUP BY k0, b
