-- SELECT COUNT(*), SUM(euros_spent) FROM visits
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS v1, random() AS rk FROM "visits$raw" WHERE "visitor_id" IS NOT NULL),
per_unit AS (SELECT u, least(count(*), 1) AS s0, list_sum(min_by(v1, rk, 1)) AS s1, list_count(min_by(v1, rk, 1)) AS s2 FROM r GROUP BY u)
SELECT sum(s0) AS s0, sum(s1) AS s1, sum(s2) AS s2 FROM per_unit
-- clean form
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE (least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) + CAST(4.02653184e+08 AS DOUBLE) - CAST(4.02653184e+08 AS DOUBLE)) END AS v1, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL),
per_unit AS (SELECT u, least(count(*), 1) AS s0, list_sum(min_by(v1, rk, 1)) AS s1, list_count(min_by(v1, rk, 1)) AS s2 FROM r GROUP BY u)
SELECT sum(s0) AS s0, sum(s1) AS s1, sum(s2) AS s2 FROM per_unit
-- integer form
WITH r AS (SELECT "visitor_id" AS u, CASE WHEN "euros_spent" IS NULL THEN NULL ELSE CAST(least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) * CAST(1.6777216e+07 AS DOUBLE) AS INTEGER) END AS v1, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL),
per_unit AS (SELECT u, least(count(*), 1) AS s0, list_sum(min_by(v1, rk, 1)) AS s1, list_count(min_by(v1, rk, 1)) AS s2 FROM r GROUP BY u)
SELECT sum(s0) AS s0, sum(s1) AS s1, sum(s2) AS s2 FROM per_unit
