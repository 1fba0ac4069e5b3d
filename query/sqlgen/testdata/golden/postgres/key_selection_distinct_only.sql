-- SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "minutes_spent" AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, _dp_k0, CAST(1 AS bigint) AS _dp_s0 FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_per_unit) AS _dp_numbered WHERE _dp_rn <= 3)
SELECT _dp_k0, sum(CAST(_dp_s0 AS bigint)) AS _dp_s0 FROM _dp_per_unit_bounded GROUP BY _dp_k0
