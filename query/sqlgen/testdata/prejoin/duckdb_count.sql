-- SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid
WITH "t0$capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
"t1$capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
r AS (SELECT "t0"."pid" AS u FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL),
per_unit AS (SELECT u, least(count(*), 3) AS s0 FROM r GROUP BY u)
SELECT sum(s0) AS s0 FROM per_unit
