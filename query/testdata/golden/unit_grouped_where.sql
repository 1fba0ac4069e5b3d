-- SELECT day, SUM(euros_spent) FROM visits WHERE minutes_spent > 10 GROUP BY day
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS v0, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND ("minutes_spent" > 10)),
per_unit AS MATERIALIZED (SELECT u, k0, list_sum(min_by(v0, rk, 1)) AS s0, least(count(*), 1) AS s1, list_count(min_by(v0, rk, 1)) AS s2, random() AS h FROM r GROUP BY u, k0),
thresholds AS (SELECT u, list_sort(list(h))[4] AS t FROM per_unit GROUP BY u),
per_unit_bounded AS (SELECT per_unit.* FROM per_unit JOIN thresholds ON per_unit.u = thresholds.u WHERE t IS NULL OR h < t)
SELECT k0, sum(s0) AS s0, sum(s1) AS s1, sum(s2) AS s2 FROM per_unit_bounded GROUP BY k0
-- integer form
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) * CAST(1.6777216e+07 AS DOUBLE) AS INTEGER) END AS v0, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND ("minutes_spent" > 10)),
per_unit AS MATERIALIZED (SELECT u, k0, list_sum(min_by(v0, rk, 1)) AS s0, least(count(*), 1) AS s1, list_count(min_by(v0, rk, 1)) AS s2, random() AS h FROM r GROUP BY u, k0),
thresholds AS (SELECT u, list_sort(list(h))[4] AS t FROM per_unit GROUP BY u),
per_unit_bounded AS (SELECT per_unit.* FROM per_unit JOIN thresholds ON per_unit.u = thresholds.u WHERE t IS NULL OR h < t)
SELECT k0, sum(s0) AS s0, sum(s1) AS s1, sum(s2) AS s2 FROM per_unit_bounded GROUP BY k0
