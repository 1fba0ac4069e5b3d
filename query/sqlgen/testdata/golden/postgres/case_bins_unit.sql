-- SELECT CASE WHEN euros_spent < 10 THEN 'low' WHEN euros_spent < 30 THEN 'mid' ELSE 'high' END AS spend, COUNT(*) FROM visits GROUP BY spend
WITH r AS (SELECT "visitor_id" AS u, CAST(CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END AS text) AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
per_unit AS (SELECT u, k0, count(*) AS s0 FROM r_bounded GROUP BY u, k0)
SELECT k0, sum(CAST(s0 AS bigint)) AS s0 FROM per_unit GROUP BY k0
