-- SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent
WITH r AS (SELECT "visitor_id" AS u, "minutes_spent" AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL),
per_unit AS (SELECT u, k0, 1 AS s0 FROM r GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM per_unit QUALIFY row_number() OVER (PARTITION BY u ORDER BY random()) <= 3)
SELECT k0, sum(s0) AS s0 FROM per_unit_bounded GROUP BY k0
