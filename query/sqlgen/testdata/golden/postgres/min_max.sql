-- SELECT sex, MIN(age), MAX(hours_per_week) FROM adult GROUP BY sex
-- histogram 0
WITH r AS (SELECT "sex" AS k0, CAST(least(greatest(floor((least(greatest("age", CAST(17.0 AS double precision)), CAST(90.0 AS double precision)) - CAST(17.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 73) AS integer) AS b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "age" IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
-- histogram 1
WITH r AS (SELECT "sex" AS k0, CAST(least(greatest(floor((least(greatest("hours_per_week", CAST(1.0 AS double precision)), CAST(99.0 AS double precision)) - CAST(1.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 98) AS integer) AS b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "hours_per_week" IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
