-- SELECT MEDIAN(euros_spent) FROM visits
-- histogram 0
WITH r AS (SELECT "visitor_id" AS u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) - CAST(0.0 AS double precision)) / CAST(0.05859375 AS double precision)), 0), 1024) AS integer) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1)
SELECT b, count(*) AS c FROM r_bounded GROUP BY b
