-- SELECT SUM(score) FROM people
SELECT sum(((least(coalesce(greatest(coalesce(toFloat64("score"), toFloat64(0.0)), toFloat64(0.0)), toFloat64(10.0)), toFloat64(10.0)) + CAST(1.00663296e+08 AS Float64) - CAST(1.00663296e+08 AS Float64)))) AS _dp_s0, count(*) AS _dp_s1, count(("score")) AS _dp_s2 FROM "people$raw"
-- clean form
SELECT sum(((least(coalesce(greatest(coalesce(toFloat64("score"), toFloat64(0.0)), toFloat64(0.0)), toFloat64(10.0)), toFloat64(10.0)) + CAST(1.00663296e+08 AS Float64) - CAST(1.00663296e+08 AS Float64)))) AS _dp_s0, count(*) AS _dp_s1, count(("score")) AS _dp_s2 FROM "people"
-- integer form
SELECT sum(toDecimal128((CASE WHEN "score" IS NULL THEN NULL ELSE CAST(round(least(coalesce(greatest(coalesce(toFloat64("score"), toFloat64(0.0)), toFloat64(0.0)), toFloat64(10.0)), toFloat64(10.0)) * toFloat64(6.7108864e+07)) AS Nullable(Int32)) END), 0)) AS _dp_s0, count(*) AS _dp_s1, count((CASE WHEN "score" IS NULL THEN NULL ELSE CAST(round(least(coalesce(greatest(coalesce(toFloat64("score"), toFloat64(0.0)), toFloat64(0.0)), toFloat64(10.0)), toFloat64(10.0)) * toFloat64(6.7108864e+07)) AS Nullable(Int32)) END)) AS _dp_s2 FROM "people"
