-- SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex
WITH r AS (SELECT "sex" AS k0, least(greatest("hours_per_week", 1), 99) AS v1, "hours_per_week" AS v2 FROM "adult" WHERE "sex" IN ('Female', 'Male'))
SELECT k0, count(*) AS s0, sum(v1) AS s1, count(v2) AS s2 FROM r GROUP BY k0
-- integer form
WITH r AS (SELECT "sex" AS k0, CASE WHEN "hours_per_week" IS NULL THEN NULL ELSE least(greatest("hours_per_week", 1), 99) END AS v1 FROM "adult" WHERE "sex" IN ('Female', 'Male'))
SELECT k0, count(*) AS s0, sum(v1) AS s1, count(v1) AS s2 FROM r GROUP BY k0
