-- SELECT day, SUM(euros_spent) FROM visits WHERE minutes_spent > 10 GROUP BY day
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS _dp_v0, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND ("minutes_spent" > 10)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, min_by(_dp_v0, _dp_rk) AS _dp_s0, least(count(*), 1) AS _dp_s1, nullif(least(count(_dp_v0), 1), 0) AS _dp_s2, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit_bounded GROUP BY _dp_k0
-- integer form
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) * CAST(1.6777216e+07 AS DOUBLE) AS INTEGER) END AS _dp_v0, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND ("minutes_spent" > 10)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, min_by(_dp_v0, _dp_rk) AS _dp_s0, least(count(*), 1) AS _dp_s1, nullif(least(count(_dp_v0), 1), 0) AS _dp_s2, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit_bounded GROUP BY _dp_k0
