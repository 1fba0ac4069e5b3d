-- SELECT CASE WHEN euros_spent < 10 THEN 'low' WHEN euros_spent < 30 THEN 'mid' ELSE 'high' END AS spend, COUNT(*) FROM visits GROUP BY spend
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CAST(CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END AS VARCHAR) AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, _dp_k0, least(count(*), 1) AS _dp_s0 FROM _dp_r GROUP BY _dp_u, _dp_k0)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0 FROM _dp_per_unit GROUP BY _dp_k0
