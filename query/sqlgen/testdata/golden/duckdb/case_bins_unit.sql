-- SELECT CASE WHEN euros_spent < 10 THEN 'low' WHEN euros_spent < 30 THEN 'mid' ELSE 'high' END AS spend, COUNT(*) FROM visits GROUP BY spend
WITH r AS (SELECT "visitor_id" AS u, CAST(CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END AS VARCHAR) AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END IS NOT NULL),
per_unit AS (SELECT u, k0, least(count(*), 1) AS s0 FROM r GROUP BY u, k0)
SELECT k0, sum(s0) AS s0 FROM per_unit GROUP BY k0
