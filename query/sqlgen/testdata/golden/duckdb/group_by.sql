-- SELECT city, COUNT(*), AVG(score) FROM people GROUP BY city
WITH _dp_r AS (SELECT "city" AS _dp_k0, (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS _dp_v1, "score" AS _dp_v2 FROM "people$raw" WHERE "city" IN ('A', 'B', 'D'))
SELECT _dp_k0, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0
-- clean form
WITH _dp_r AS (SELECT "city" AS _dp_k0, (least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) + CAST(1.00663296e+08 AS DOUBLE) - CAST(1.00663296e+08 AS DOUBLE)) AS _dp_v1, "score" AS _dp_v2 FROM "people" WHERE "city" IN ('A', 'B', 'D'))
SELECT _dp_k0, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0
-- integer form
WITH _dp_r AS (SELECT "city" AS _dp_k0, CASE WHEN "score" IS NULL THEN NULL ELSE CAST(least(greatest("score", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) * CAST(6.7108864e+07 AS DOUBLE) AS INTEGER) END AS _dp_v1 FROM "people" WHERE "city" IN ('A', 'B', 'D'))
SELECT _dp_k0, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0
