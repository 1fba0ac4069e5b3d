-- SELECT day, MEDIAN(minutes_spent) FROM visits GROUP BY day
-- histogram 0
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, "day" AS _dp_k0, CAST(least(greatest(floor((least(greatest("minutes_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) - CAST(0.0 AS double precision)) / CAST(0.05859375 AS double precision)), 0), 1024) AS integer) AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "minutes_spent" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u, _dp_k0 ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1),
_dp_unit_groups AS (SELECT _dp_u, _dp_k0 FROM _dp_r_bounded GROUP BY _dp_u, _dp_k0),
_dp_unit_groups_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_unit_groups) AS _dp_numbered WHERE _dp_rn <= 3)
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM _dp_r_bounded JOIN (SELECT _dp_u AS _dp_u_pair, _dp_k0 AS _dp_k0_pair FROM _dp_unit_groups_bounded) AS _dp_pairs ON _dp_u = _dp_u_pair AND _dp_k0 IS NOT DISTINCT FROM _dp_k0_pair GROUP BY _dp_k0, _dp_b
