-- SELECT sex, MIN(age), MAX(hours_per_week) FROM adult GROUP BY sex
-- histogram 0
SELECT k0, b, count(*) AS c FROM (SELECT "sex" AS k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(17.0)), toFloat64(17.0)), toFloat64(90.0)), toFloat64(90.0)) - toFloat64(17.0)) / toFloat64(1.0)), 0), 0), 73), 73) AS Nullable(Int32)) AS b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "age" IS NOT NULL) AS r GROUP BY k0, b
-- histogram 1
SELECT k0, b, count(*) AS c FROM (SELECT "sex" AS k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("hours_per_week"), toFloat64(1.0)), toFloat64(1.0)), toFloat64(99.0)), toFloat64(99.0)) - toFloat64(1.0)) / toFloat64(1.0)), 0), 0), 98), 98) AS Nullable(Int32)) AS b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "hours_per_week" IS NOT NULL) AS r GROUP BY k0, b
