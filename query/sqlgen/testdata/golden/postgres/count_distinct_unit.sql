-- SELECT day, COUNT(DISTINCT visitor_id), COUNT(*) FROM visits GROUP BY day
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u, _dp_k0 ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_per_unit AS (SELECT _dp_u, _dp_k0, CAST(1 AS bigint) AS _dp_s0, count(*) AS _dp_s1 FROM _dp_r_bounded GROUP BY _dp_u, _dp_k0),
_dp_per_unit_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_per_unit) AS _dp_numbered WHERE _dp_rn <= 3)
SELECT _dp_k0, sum(CAST(_dp_s0 AS bigint)) AS _dp_s0, sum(CAST(_dp_s1 AS bigint)) AS _dp_s1 FROM _dp_per_unit_bounded GROUP BY _dp_k0
