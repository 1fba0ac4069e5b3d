-- SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent
WITH r AS (SELECT "visitor_id" AS u, "minutes_spent" AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL),
per_unit AS (SELECT u, k0, CAST(1 AS bigint) AS s0 FROM r GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM per_unit) AS numbered WHERE rn <= 3)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0 FROM per_unit_bounded GROUP BY k0
