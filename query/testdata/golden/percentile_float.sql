-- SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY score) FROM people WHERE flag

-- histogram 0
WITH r AS (SELECT least(CAST(floor((least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.009765625 AS DOUBLE)) AS INTEGER), 1024) AS b FROM "people" WHERE ("flag" = TRUE) AND "score" IS NOT NULL)
SELECT b, count(*) AS c FROM r GROUP BY b
