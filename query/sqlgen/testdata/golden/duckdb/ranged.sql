-- SELECT grp, COUNT(*), SUM(v), AVG(v) FROM clustered GROUP BY grp
-- range 0 of 4
WITH _dp_r AS (SELECT "pid" AS _dp_u, "grp" AS _dp_k0, CASE WHEN "v" IS NULL THEN NULL ELSE (least(greatest("v", CAST(0.0 AS DOUBLE)), CAST(100.0 AS DOUBLE)) + CAST(8.05306368e+08 AS DOUBLE) - CAST(8.05306368e+08 AS DOUBLE)) END AS _dp_v1, random() AS _dp_rk FROM "clustered$raw" WHERE "pid" IS NOT NULL AND "pid" < CAST(50000 AS BIGINT) AND "grp" IN (0, 1, 2, 3, 4)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, least(count(*), 2) AS _dp_s0, CASE WHEN count(_dp_v1) <= 2 THEN sum(_dp_v1) ELSE list_sum([min_by(_dp_v1, _dp_rk), max_by(_dp_v1, _dp_rk)]) END AS _dp_s1, nullif(least(count(_dp_v1), 2), 0) AS _dp_s2, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit_bounded GROUP BY _dp_k0
-- range 1 of 4
WITH _dp_r AS (SELECT "pid" AS _dp_u, "grp" AS _dp_k0, CASE WHEN "v" IS NULL THEN NULL ELSE (least(greatest("v", CAST(0.0 AS DOUBLE)), CAST(100.0 AS DOUBLE)) + CAST(8.05306368e+08 AS DOUBLE) - CAST(8.05306368e+08 AS DOUBLE)) END AS _dp_v1, random() AS _dp_rk FROM "clustered$raw" WHERE "pid" IS NOT NULL AND "pid" >= CAST(50000 AS BIGINT) AND "pid" < CAST(100000 AS BIGINT) AND "grp" IN (0, 1, 2, 3, 4)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, least(count(*), 2) AS _dp_s0, CASE WHEN count(_dp_v1) <= 2 THEN sum(_dp_v1) ELSE list_sum([min_by(_dp_v1, _dp_rk), max_by(_dp_v1, _dp_rk)]) END AS _dp_s1, nullif(least(count(_dp_v1), 2), 0) AS _dp_s2, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit_bounded GROUP BY _dp_k0
-- range 3 of 4
WITH _dp_r AS (SELECT "pid" AS _dp_u, "grp" AS _dp_k0, CASE WHEN "v" IS NULL THEN NULL ELSE (least(greatest("v", CAST(0.0 AS DOUBLE)), CAST(100.0 AS DOUBLE)) + CAST(8.05306368e+08 AS DOUBLE) - CAST(8.05306368e+08 AS DOUBLE)) END AS _dp_v1, random() AS _dp_rk FROM "clustered$raw" WHERE "pid" IS NOT NULL AND "pid" >= CAST(150000 AS BIGINT) AND "grp" IN (0, 1, 2, 3, 4)),
_dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, least(count(*), 2) AS _dp_s0, CASE WHEN count(_dp_v1) <= 2 THEN sum(_dp_v1) ELSE list_sum([min_by(_dp_v1, _dp_rk), max_by(_dp_v1, _dp_rk)]) END AS _dp_s1, nullif(least(count(_dp_v1), 2), 0) AS _dp_s2, random() AS _dp_h FROM _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t)
SELECT _dp_k0, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_per_unit_bounded GROUP BY _dp_k0
