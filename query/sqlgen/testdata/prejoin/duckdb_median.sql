-- SELECT MEDIAN(x.v) FROM t x JOIN p y ON x.pid = y.pid
WITH "t0$capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
"t1$capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
per_unit AS (SELECT u, count(*) AS n, nullif(count(v0), 0) AS s0 FROM (SELECT "t0"."pid" AS u, "t0"."v" AS v0, random() AS rk FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL) AS r GROUP BY u),
kept AS MATERIALIZED (SELECT * FROM per_unit),
sampled AS (SELECT u, list_count(min_by(v0, rk, 3)) AS s0 FROM (SELECT "t0"."pid" AS u, "t0"."v" AS v0, random() AS rk FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL) AS r JOIN (SELECT u AS pair_u FROM kept WHERE n > 3) AS heavy ON u = pair_u GROUP BY u)
SELECT sum(s0) AS s0 FROM (SELECT u, s0 FROM kept WHERE n <= 3 UNION ALL SELECT u, s0 FROM sampled) AS kept_values
-- histogram
WITH "t0$capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
"t1$capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
per_unit AS (SELECT u, count(*) AS n FROM (SELECT "t0"."pid" AS u, CAST(least(greatest(floor((least(greatest("t0"."v", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 10) AS INTEGER) AS b FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL AND "t0"."v" IS NOT NULL) AS r GROUP BY u),
kept_pairs AS MATERIALIZED (SELECT u, n FROM per_unit),
kept AS (SELECT r.b FROM (SELECT "t0"."pid" AS u, CAST(least(greatest(floor((least(greatest("t0"."v", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 10) AS INTEGER) AS b FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL AND "t0"."v" IS NOT NULL) AS r JOIN (SELECT u FROM kept_pairs WHERE n <= 3) AS light ON r.u = light.u
UNION ALL
SELECT unnest(bs) AS b FROM (SELECT r.u, min_by(r.b, r.rk, 3) AS bs FROM (SELECT "t0"."pid" AS u, CAST(least(greatest(floor((least(greatest("t0"."v", CAST(0.0 AS DOUBLE)), CAST(10.0 AS DOUBLE)) - CAST(0.0 AS DOUBLE)) / CAST(1.0 AS DOUBLE)), 0), 10) AS INTEGER) AS b, random() AS rk FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL AND "t0"."v" IS NOT NULL) AS r JOIN (SELECT u FROM kept_pairs WHERE n > 3) AS heavy ON r.u = heavy.u GROUP BY r.u) AS sampled)
SELECT b, count(*) AS c FROM kept GROUP BY b
