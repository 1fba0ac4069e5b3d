-- SELECT MEDIAN(euros_spent) FROM visits
-- histogram 0
WITH per_unit AS (SELECT u, count(*) AS n FROM (SELECT "visitor_id" AS u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS r GROUP BY u),
kept_pairs AS MATERIALIZED (SELECT u, n FROM per_unit),
kept AS (SELECT r.b FROM (SELECT "visitor_id" AS u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS r JOIN (SELECT u FROM kept_pairs WHERE n <= 1) AS light ON r.u = light.u
UNION ALL
SELECT unnest(bs) AS b FROM (SELECT r.u, min_by(r.b, r.rk, 1) AS bs FROM (SELECT "visitor_id" AS u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL) AS r JOIN (SELECT u FROM kept_pairs WHERE n > 1) AS heavy ON r.u = heavy.u GROUP BY r.u) AS sampled)
SELECT b, count(*) AS c FROM kept GROUP BY b
