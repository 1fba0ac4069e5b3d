-- SELECT SUM(age) FROM adult WHERE age BETWEEN 30 AND 60
WITH r AS (SELECT least(greatest("age", 30), 60) AS v0, "age" AS v2 FROM "adult" WHERE ("age" BETWEEN 30 AND 60))
SELECT sum(v0) AS s0, count(*) AS s1, count(v2) AS s2 FROM r
-- integer form
WITH r AS (SELECT CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 30), 60) END AS v0 FROM "adult" WHERE ("age" BETWEEN 30 AND 60))
SELECT sum(v0) AS s0, count(*) AS s1, count(v0) AS s2 FROM r
