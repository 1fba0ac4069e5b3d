-- SELECT city, MIN(signup), MAX(seen - INTERVAL '1 hour'), MEDIAN(signup + INTERVAL '1 week') FROM events GROUP BY city

-- histogram 0
WITH r AS (SELECT "city" AS k0, CAST(least(greatest(floor((least(greatest("signup", CAST(19723.0 AS DOUBLE)), CAST(20088.0 AS DOUBLE)) - CAST(19723.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 365) AS INTEGER) AS b FROM "events" WHERE "city" IN ('Paris', 'Lyon', 'Nice') AND "signup" IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
-- histogram 1
WITH r AS (SELECT "city" AS k0, CAST(least(greatest(floor((least(greatest(CAST((CASE WHEN "seen" IS NULL THEN NULL ELSE least(greatest(CAST("seen" AS DOUBLE), CAST(1.7040672e+15 AS DOUBLE)), CAST(1.735689599e+15 AS DOUBLE)) END - CAST(3.6e+09 AS DOUBLE)) AS BIGINT), CAST(1.7040636e+15 AS DOUBLE)), CAST(1.735685999e+15 AS DOUBLE)) - CAST(1.7040636e+15 AS DOUBLE)) / CAST(3.08812490234375e+10 AS DOUBLE)), 0), 1024) AS INTEGER) AS b FROM "events" WHERE "city" IN ('Paris', 'Lyon', 'Nice') AND CAST((CASE WHEN "seen" IS NULL THEN NULL ELSE least(greatest(CAST("seen" AS DOUBLE), CAST(1.7040672e+15 AS DOUBLE)), CAST(1.735689599e+15 AS DOUBLE)) END - CAST(3.6e+09 AS DOUBLE)) AS BIGINT) IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
-- histogram 2
WITH r AS (SELECT "city" AS k0, CAST(least(greatest(floor((least(greatest(CAST((CASE WHEN "signup" IS NULL THEN NULL ELSE least(greatest(CAST("signup" AS DOUBLE), CAST(19723.0 AS DOUBLE)), CAST(20088.0 AS DOUBLE)) END + CAST(7.0 AS DOUBLE)) AS BIGINT), CAST(19730.0 AS DOUBLE)), CAST(20095.0 AS DOUBLE)) - CAST(19730.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 365) AS INTEGER) AS b FROM "events" WHERE "city" IN ('Paris', 'Lyon', 'Nice') AND CAST((CASE WHEN "signup" IS NULL THEN NULL ELSE least(greatest(CAST("signup" AS DOUBLE), CAST(19723.0 AS DOUBLE)), CAST(20088.0 AS DOUBLE)) END + CAST(7.0 AS DOUBLE)) AS BIGINT) IS NOT NULL)
SELECT k0, b, count(*) AS c FROM r GROUP BY k0, b
