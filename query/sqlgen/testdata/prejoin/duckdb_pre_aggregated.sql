-- SELECT COUNT(*) FROM (SELECT x.pid, COUNT(*) AS n FROM t x JOIN p y ON x.pid = y.pid GROUP BY x.pid) s WHERE n >= 2
WITH "t0$capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 6),
"t1$capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 6),
r AS (SELECT 1 AS one FROM (SELECT "t0"."pid" AS "pid", CAST(count(*) AS BIGINT) AS "n" FROM "t0$capped" AS "t0" JOIN "t1$capped" AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL GROUP BY "t0"."pid") AS "t0" WHERE ("n" >= 2))
SELECT count(*) AS s0 FROM r
