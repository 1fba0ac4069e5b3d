-- SELECT CASE WHEN euros_spent < 10 THEN 'low' WHEN euros_spent < 30 THEN 'mid' ELSE 'high' END AS spend, COUNT(*) FROM visits GROUP BY spend
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CAST(CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END AS text) AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND CASE WHEN "euros_spent" < 10 THEN 'low' WHEN "euros_spent" < 30 THEN 'mid' ELSE 'high' END IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u, _dp_k0 ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_per_unit AS (SELECT _dp_u, _dp_k0, count(*) AS _dp_s0 FROM _dp_r_bounded GROUP BY _dp_u, _dp_k0)
SELECT _dp_k0, sum(CAST(_dp_s0 AS bigint)) AS _dp_s0 FROM _dp_per_unit GROUP BY _dp_k0
