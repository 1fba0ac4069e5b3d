-- SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education
WITH _dp_r AS (SELECT "education" AS _dp_k0, least(greatest("age", CAST(17 AS BIGINT)), CAST(90 AS BIGINT)) AS _dp_v1, "age" AS _dp_v2 FROM "adult")
SELECT _dp_k0, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0
-- integer form
WITH _dp_r AS (SELECT "education" AS _dp_k0, CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", CAST(17 AS BIGINT)), CAST(90 AS BIGINT)) END AS _dp_v1 FROM "adult")
SELECT _dp_k0, count(*) AS _dp_s0, sum(_dp_v1) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0
