-- SELECT SUM(score) FROM people
WITH _dp_r AS (SELECT (least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) + CAST(1.00663296e+08 AS double precision) - CAST(1.00663296e+08 AS double precision)) AS _dp_v0, "score" AS _dp_v2 FROM "people$raw")
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- clean form
WITH _dp_r AS (SELECT (least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) + CAST(1.00663296e+08 AS double precision) - CAST(1.00663296e+08 AS double precision)) AS _dp_v0, "score" AS _dp_v2 FROM "people")
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- integer form
WITH _dp_r AS (SELECT CASE WHEN "score" IS NULL THEN NULL ELSE CAST(least(greatest("score", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) * CAST(6.7108864e+07 AS double precision) AS integer) END AS _dp_v0 FROM "people")
SELECT sum(CAST(_dp_v0 AS bigint)) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v0) AS _dp_s2 FROM _dp_r
