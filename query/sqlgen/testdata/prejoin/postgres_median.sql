-- SELECT MEDIAN(x.v) FROM t x JOIN p y ON x.pid = y.pid
WITH r AS (SELECT "t0"."pid" AS u, "t0"."v" AS v0 FROM (SELECT "pid", "day", "v" FROM (SELECT "pid", "day", "v", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "t" AS "t0" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t0" JOIN (SELECT "pid", "kind" FROM (SELECT "pid", "kind", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "p" AS "t1" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 3),
per_unit AS (SELECT u, count(v0) AS s0 FROM r_bounded GROUP BY u)
SELECT sum(CAST(s0 AS bigint)) AS s0 FROM per_unit
-- histogram
WITH r AS (SELECT "t0"."pid" AS u, CAST(least(greatest(floor((least(greatest("t0"."v", CAST(0.0 AS double precision)), CAST(10.0 AS double precision)) - CAST(0.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 10) AS integer) AS b FROM (SELECT "pid", "day", "v" FROM (SELECT "pid", "day", "v", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "t" AS "t0" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t0" JOIN (SELECT "pid", "kind" FROM (SELECT "pid", "kind", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "p" AS "t1" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL AND "t0"."v" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 3)
SELECT b, count(*) AS c FROM r_bounded GROUP BY b
