-- SELECT education, MEDIAN(age) FROM adult GROUP BY education
WITH r AS (SELECT "education" AS k0, "age" AS v1 FROM "adult")
SELECT k0, count(*) AS s0, count(v1) AS s1 FROM r GROUP BY k0
-- histogram 0
WITH r AS (SELECT "education" AS k0, CAST(least(greatest(floor((least(greatest("age", CAST(17.0 AS double precision)), CAST(90.0 AS double precision)) - CAST(17.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 73) AS integer) AS b FROM "adult" WHERE "age" IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
