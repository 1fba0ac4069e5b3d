-- SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid
WITH r AS (SELECT "t0"."pid" AS u FROM (SELECT "pid", "day", "v" FROM "t" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY hash(SALT, "pid", "day", "v"), "pid", "day", "v") <= 3) AS "t0" JOIN (SELECT "pid", "kind" FROM "p" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY hash(SALT, "pid", "kind"), "pid", "kind") <= 3) AS "t1" ON "t0"."pid" = "t1"."pid" WHERE "t0"."pid" IS NOT NULL),
per_unit AS (SELECT u, least(count(*), 3) AS s0 FROM r GROUP BY u)
SELECT sum(s0) AS s0 FROM per_unit
