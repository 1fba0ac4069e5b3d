-- SELECT SUM(score) FROM people
WITH _dp_r AS (SELECT (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS _dp_v0, "score" AS _dp_v2 FROM "people$raw")
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- clean form
WITH _dp_r AS (SELECT (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS _dp_v0, "score" AS _dp_v2 FROM "people")
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- integer form
WITH _dp_r AS (SELECT CASE WHEN "score" IS NULL THEN NULL ELSE CAST(least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) * CAST(6.7108864e+07 AS DOUBLE) AS INTEGER) END AS _dp_v0 FROM "people")
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v0) AS _dp_s2 FROM _dp_r
