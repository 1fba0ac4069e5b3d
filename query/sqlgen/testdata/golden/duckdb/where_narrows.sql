-- SELECT SUM(age) FROM adult WHERE age BETWEEN 30 AND 60
WITH _dp_r AS (SELECT least(greatest("age", CAST(30 AS BIGINT)), CAST(60 AS BIGINT)) AS _dp_v0, "age" AS _dp_v2 FROM "adult" WHERE ("age" BETWEEN 30 AND 60))
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- integer form
WITH _dp_r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", CAST(30 AS BIGINT)), CAST(60 AS BIGINT)) END AS _dp_v0 FROM "adult" WHERE ("age" BETWEEN 30 AND 60))
SELECT sum(_dp_v0) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v0) AS _dp_s2 FROM _dp_r
