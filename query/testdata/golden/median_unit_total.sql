-- SELECT MEDIAN(euros_spent) FROM visits

-- histogram 0
WITH r AS (SELECT "visitor_id" AS u, least(CAST(floor((least(greatest("euros_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)) AS INTEGER), 1024) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL),
r_bounded AS (SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY u ORDER BY random()) <= 1)
SELECT b, count(*) AS c FROM r_bounded GROUP BY b
