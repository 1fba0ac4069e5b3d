-- SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "minutes_spent" AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, CAST(1 AS BIGINT) AS _dp_s0, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0 FROM _dp_per_unit_bounded GROUP BY _dp_k0
