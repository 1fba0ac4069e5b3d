-- SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY score) FROM people WHERE flag
-- histogram 0
SELECT _dp_b, count(*) AS _dp_c FROM (SELECT CAST(least(coalesce(greatest(coalesce(floor((least(coalesce(greatest(coalesce(toFloat64("score"), toFloat64(0.0)), toFloat64(0.0)), toFloat64(10.0)), toFloat64(10.0)) - toFloat64(0.0)) / toFloat64(0.009765625)), 0), 0), 1024), 1024) AS Nullable(Int32)) AS _dp_b FROM "people" WHERE ("flag" = 1) AND "score" IS NOT NULL) AS _dp_r GROUP BY _dp_b
