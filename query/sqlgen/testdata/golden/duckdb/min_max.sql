-- SELECT sex, MIN(age), MAX(hours_per_week) FROM adult GROUP BY sex
-- histogram 0
WITH _dp_r AS (SELECT "sex" AS _dp_k0, CAST(least(greatest(floor((least(greatest("age", CAST(17.0 AS DOUBLE)), CAST(90.0 AS DOUBLE)) - CAST(17.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 73) AS INTEGER) AS _dp_b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "age" IS NOT NULL)
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM _dp_r GROUP BY _dp_k0, _dp_b
-- histogram 1
WITH _dp_r AS (SELECT "sex" AS _dp_k0, CAST(least(greatest(floor((least(greatest("hours_per_week", CAST(1.0 AS DOUBLE)), CAST(99.0 AS DOUBLE)) - CAST(1.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 98) AS INTEGER) AS _dp_b FROM "adult" WHERE "sex" IN ('Female', 'Male') AND "hours_per_week" IS NOT NULL)
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM _dp_r GROUP BY _dp_k0, _dp_b
