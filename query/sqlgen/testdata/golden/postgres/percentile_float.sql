-- SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY score) FROM people WHERE flag
-- histogram 0
WITH _dp_r AS (SELECT CAST(least(greatest(floor((least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) - CAST(0.0 AS double precision)) / CAST(0.009765625 AS double precision)), 0), 1024) AS integer) AS _dp_b FROM "people" WHERE ("flag" = TRUE) AND "score" IS NOT NULL)
SELECT _dp_b, count(*) AS _dp_c FROM _dp_r GROUP BY _dp_b
