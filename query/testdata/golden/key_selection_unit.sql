-- SELECT minutes_spent, COUNT(*) FROM visits GROUP BY minutes_spent
WITH r AS (SELECT "visitor_id" AS u, "minutes_spent" AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL),
r_bounded AS (SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY u, k0 ORDER BY random()) <= 1),
per_unit AS (SELECT u, k0, 1 AS s0, count(*) AS s1 FROM r_bounded GROUP BY u, k0),
per_unit_bounded AS (SELECT * FROM per_unit QUALIFY row_number() OVER (PARTITION BY u ORDER BY random()) <= 3)
SELECT k0, sum(s0) AS s0, sum(s1) AS s1 FROM per_unit_bounded GROUP BY k0
