-- SELECT education, MEDIAN(age) FROM adult GROUP BY education
SELECT "education" AS _dp_k0, count(*) AS _dp_s0, count(("age")) AS _dp_s1 FROM "adult" GROUP BY _dp_k0
-- histogram 0
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM (SELECT "education" AS _dp_k0, CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("age"), toFloat64(17.0)), toFloat64(17.0)), toFloat64(90.0)), toFloat64(90.0)) - toFloat64(17.0)) / toFloat64(1.0)), 0), 0), 73), 73) AS Nullable(Int32)) AS _dp_b FROM "adult" WHERE "age" IS NOT NULL) AS _dp_r GROUP BY _dp_k0, _dp_b
