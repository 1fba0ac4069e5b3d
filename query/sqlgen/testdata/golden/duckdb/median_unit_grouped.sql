-- SELECT day, MEDIAN(minutes_spent) FROM visits GROUP BY day
-- histogram 0
WITH per_unit AS MATERIALIZED (SELECT u, k0, count(*) AS n, random() AS h FROM (SELECT "visitor_id" AS u, "day" AS k0, CAST(least(greatest(floor((least(greatest("minutes_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "minutes_spent" IS NOT NULL) AS r GROUP BY u, k0),
thresholds AS (SELECT u, min(h, 4)[4] AS t FROM per_unit GROUP BY u),
per_unit_bounded AS (SELECT per_unit.* FROM per_unit JOIN thresholds ON per_unit.u = thresholds.u WHERE t IS NULL OR h < t),
kept_pairs AS MATERIALIZED (SELECT u, k0, n FROM per_unit_bounded),
kept AS (SELECT r.k0, r.b FROM (SELECT "visitor_id" AS u, "day" AS k0, CAST(least(greatest(floor((least(greatest("minutes_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "minutes_spent" IS NOT NULL) AS r JOIN (SELECT u, k0 FROM kept_pairs WHERE n <= 1) AS light ON r.u = light.u AND r.k0 IS NOT DISTINCT FROM light.k0
UNION ALL
SELECT k0, unnest(bs) AS b FROM (SELECT r.u, r.k0, min_by(r.b, r.rk, 1) AS bs FROM (SELECT "visitor_id" AS u, "day" AS k0, CAST(least(greatest(floor((least(greatest("minutes_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "minutes_spent" IS NOT NULL) AS r JOIN (SELECT u, k0 FROM kept_pairs WHERE n > 1) AS heavy ON r.u = heavy.u AND r.k0 IS NOT DISTINCT FROM heavy.k0 GROUP BY r.u, r.k0) AS sampled)
SELECT k0, b, count(*) AS c FROM kept GROUP BY k0, b
