-- SELECT MEDIAN(euros_spent) FROM visits

-- histogram 0
WITH r AS (SELECT "visitor_id" AS u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)), 0), 1024) AS INTEGER) AS b, random() AS rk FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL),
per_unit AS (SELECT u, min_by(b, rk, 1) AS bs FROM r GROUP BY u),
kept AS (SELECT unnest(bs) AS b FROM per_unit)
SELECT b, count(*) AS c FROM kept GROUP BY b
