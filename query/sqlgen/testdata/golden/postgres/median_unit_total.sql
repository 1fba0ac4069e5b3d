-- SELECT MEDIAN(euros_spent) FROM visits
-- histogram 0
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u, CAST(least(greatest(floor((least(greatest("euros_spent", CAST(0.0 AS double precision)), CAST(60.0 AS double precision)) - CAST(0.0 AS double precision)) / CAST(0.05859375 AS double precision)), 0), 1024) AS integer) AS _dp_b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "euros_spent" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 1)
SELECT _dp_b, count(*) AS _dp_c FROM _dp_r_bounded GROUP BY _dp_b
