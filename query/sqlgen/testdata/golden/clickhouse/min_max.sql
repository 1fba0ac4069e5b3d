-- SELECT sex, MIN(age), MAX(hours_per_week) FROM adult GROUP BY sex
-- histogram 0
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM (SELECT "sex" AS _dp_k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(17.0)), toFloat64(17.0)), toFloat64(90.0)), toFloat64(90.0)) - toFloat64(17.0)) / toFloat64(1.0)), 0), 0), 73), 73) AS Nullable(Int32)) AS _dp_b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "age" IS NOT NULL) AS _dp_r GROUP BY _dp_k0, _dp_b
-- histogram 1
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM (SELECT "sex" AS _dp_k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("hours_per_week"), toFloat64(1.0)), toFloat64(1.0)), toFloat64(99.0)), toFloat64(99.0)) - toFloat64(1.0)) / toFloat64(1.0)), 0), 0), 98), 98) AS Nullable(Int32)) AS _dp_b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "hours_per_week" IS NOT NULL) AS _dp_r GROUP BY _dp_k0, _dp_b
