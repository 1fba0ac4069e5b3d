-- SELECT day, MEDIAN(minutes_spent) FROM visits GROUP BY day

-- histogram 0
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, least(CAST(floor((least(greatest("minutes_spent", CAST(0.0 AS DOUBLE)), CAST(60.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(0.05859375 AS DOUBLE)) AS INTEGER), 1024) AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "minutes_spent" IS NOT NULL),
r_bounded AS (SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY u, k0 ORDER BY random()) <= 1),
unit_groups AS (SELECT u, k0 FROM r_bounded GROUP BY u, k0),
unit_groups_bounded AS (SELECT * FROM unit_groups QUALIFY row_number() OVER (PARTITION BY u ORDER BY random()) <= 3)
SELECT k0, b, count(*) AS c FROM r_bounded JOIN unit_groups_bounded USING (u, k0) GROUP BY k0, b
