-- SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid
WITH r AS (SELECT "t0"."pid" AS u FROM (SELECT "pid", "day", "v" FROM (SELECT "pid", "day", "v", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "t" AS "t0" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t0" JOIN (SELECT "pid", "kind" FROM (SELECT "pid", "kind", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS "rn$" FROM "p" AS "t1" WHERE "pid" IS NOT NULL) AS numbered WHERE "rn$" <= 3) AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 3),
per_unit AS (SELECT u, count(*) AS s0 FROM r_bounded GROUP BY u)
SELECT sum(CAST(s0 AS bigint)) AS s0 FROM per_unit
