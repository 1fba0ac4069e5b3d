-- SELECT day, COUNT(DISTINCT visitor_id), COUNT(*) FROM visits GROUP BY day
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, CAST(1 AS BIGINT) AS _dp_s0, least(count(*), 1) AS _dp_s1, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1 FROM _dp_per_unit_bounded GROUP BY _dp_k0
