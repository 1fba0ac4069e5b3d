-- SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid
WITH _dp_r AS (SELECT "_dp_t0"."pid" AS _dp_u FROM (SELECT "pid", "day", "v" FROM (SELECT "pid", "day", "v", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS _dp_rn FROM "t" AS "_dp_t0" WHERE "pid" IS NOT NULL) AS _dp_numbered WHERE _dp_rn <= 3) AS "_dp_t0" JOIN (SELECT "pid", "kind" FROM (SELECT "pid", "kind", row_number() OVER (PARTITION BY "pid" ORDER BY random()) AS _dp_rn FROM "p" AS "_dp_t1" WHERE "pid" IS NOT NULL) AS _dp_numbered WHERE _dp_rn <= 3) AS "_dp_t1" ON "_dp_t0"."pid" = "_dp_t1"."pid" WHERE "_dp_t0"."pid" IS NOT NULL),
_dp_r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY _dp_u ORDER BY random()) AS _dp_rn FROM _dp_r) AS _dp_numbered WHERE _dp_rn <= 3),
_dp_per_unit AS (SELECT _dp_u, count(*) AS _dp_s0 FROM _dp_r_bounded GROUP BY _dp_u)
SELECT sum(CAST(_dp_s0 AS bigint)) AS _dp_s0 FROM _dp_per_unit
