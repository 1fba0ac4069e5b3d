-- SELECT day, COUNT(*) FROM visits GROUP BY day ORDER BY COUNT(*) DESC LIMIT 3
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, k0, count(*) AS s0 FROM r_bounded GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM per_unit) AS numbered WHERE rn <= 3)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0 FROM per_unit_bounded GROUP BY k0
