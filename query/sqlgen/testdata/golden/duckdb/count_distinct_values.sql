-- SELECT day, COUNT(DISTINCT euros_spent) FROM visits GROUP BY day
-- histogram 0
WITH _dp_per_unit AS MATERIALIZED (SELECT _dp_u, _dp_k0, count(*) AS _dp_n, random() AS _dp_h FROM (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, "euros_spent" AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "euros_spent" IS NOT NULL) AS _dp_r GROUP BY _dp_u, _dp_k0),
_dp_thresholds AS (SELECT _dp_u, min(_dp_h, 4)[4] AS _dp_t FROM _dp_per_unit GROUP BY _dp_u),
_dp_per_unit_bounded AS (SELECT _dp_per_unit.* FROM _dp_per_unit JOIN _dp_thresholds ON _dp_per_unit._dp_u = _dp_thresholds._dp_u WHERE _dp_t IS NULL OR _dp_h < _dp_t),
_dp_kept_pairs AS MATERIALIZED (SELECT _dp_u, _dp_k0, _dp_n FROM _dp_per_unit_bounded),
_dp_kept AS (SELECT _dp_r._dp_k0, _dp_r._dp_b FROM (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, "euros_spent" AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "euros_spent" IS NOT NULL) AS _dp_r JOIN (SELECT _dp_u, _dp_k0 FROM _dp_kept_pairs WHERE _dp_n <= 1) AS _dp_light ON _dp_r._dp_u = _dp_light._dp_u AND _dp_r._dp_k0 IS NOT DISTINCT FROM _dp_light._dp_k0
UNION ALL
SELECT _dp_k0, unnest(_dp_bs) AS _dp_b FROM (SELECT _dp_r._dp_u, _dp_r._dp_k0, min_by(_dp_r._dp_b, _dp_r._dp_rk, 1) AS _dp_bs FROM (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, "euros_spent" AS _dp_b, random() AS _dp_rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "euros_spent" IS NOT NULL) AS _dp_r JOIN (SELECT _dp_u, _dp_k0 FROM _dp_kept_pairs WHERE _dp_n > 1) AS _dp_heavy ON _dp_r._dp_u = _dp_heavy._dp_u AND _dp_r._dp_k0 IS NOT DISTINCT FROM _dp_heavy._dp_k0 GROUP BY _dp_r._dp_u, _dp_r._dp_k0) AS _dp_sampled)
SELECT _dp_k0, CAST(0 AS BIGINT) AS _dp_b, count(DISTINCT _dp_b) AS _dp_c FROM _dp_kept GROUP BY _dp_k0
