-- SELECT sex, race, COUNT(*), AVG(hours_per_week) FROM adult WHERE age > 30 GROUP BY sex, race
WITH _dp_r AS (SELECT "sex" AS _dp_k0, "race" AS _dp_k1, least(greatest("hours_per_week", CAST(1 AS bigint)), CAST(99 AS bigint)) AS _dp_v1, "hours_per_week" AS _dp_v2 FROM "adult" WHERE ("age" > 30)),
_dp_cells AS (SELECT _dp_k0 AS _dp_g0, _dp_k1 AS _dp_g1, count(*) AS _dp_s0, sum(CAST(_dp_v1 AS bigint)) AS _dp_s1, count(_dp_v2) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0, _dp_k1)
SELECT CASE WHEN _dp_g0 IN ('Female', 'Male') THEN _dp_g0 END AS _dp_k0, CASE WHEN _dp_g1 IN ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other') THEN _dp_g1 END AS _dp_k1, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_cells GROUP BY _dp_k0, _dp_k1
-- integer form
WITH _dp_r AS (SELECT "sex" AS _dp_k0, "race" AS _dp_k1, CASE WHEN "hours_per_week" IS NULL THEN NULL ELSE least(greatest("hours_per_week", CAST(1 AS bigint)), CAST(99 AS bigint)) END AS _dp_v1 FROM "adult" WHERE ("age" > 30)),
_dp_cells AS (SELECT _dp_k0 AS _dp_g0, _dp_k1 AS _dp_g1, count(*) AS _dp_s0, sum(CAST(_dp_v1 AS bigint)) AS _dp_s1, count(_dp_v1) AS _dp_s2 FROM _dp_r GROUP BY _dp_k0, _dp_k1)
SELECT CASE WHEN _dp_g0 IN ('Female', 'Male') THEN _dp_g0 END AS _dp_k0, CASE WHEN _dp_g1 IN ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other') THEN _dp_g1 END AS _dp_k1, sum(_dp_s0) AS _dp_s0, sum(_dp_s1) AS _dp_s1, sum(_dp_s2) AS _dp_s2 FROM _dp_cells GROUP BY _dp_k0, _dp_k1
