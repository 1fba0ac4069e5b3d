-- SELECT SUM(age), AVG(age) FROM people
WITH _dp_r AS (SELECT least(greatest("age", CAST(18 AS bigint)), CAST(100 AS bigint)) AS _dp_v0, "age" AS _dp_v2 FROM "people")
SELECT sum(CAST(_dp_v0 AS bigint)) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r
-- integer form
WITH _dp_r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", CAST(18 AS bigint)), CAST(100 AS bigint)) END AS _dp_v0 FROM "people")
SELECT sum(CAST(_dp_v0 AS bigint)) AS _dp_s0, count(*) AS _dp_s1, count(_dp_v0) AS _dp_s2 FROM _dp_r
