-- SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid
WITH "_dp_t0_capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "_dp_t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
"_dp_t1_capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "_dp_t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 3),
_dp_r AS (SELECT "_dp_t0"."pid" AS _dp_u FROM "_dp_t0_capped" AS "_dp_t0" JOIN "_dp_t1_capped" AS "_dp_t1" ON "_dp_t0"."pid" = "_dp_t1"."pid" WHERE "_dp_t0"."pid" IS NOT NULL),
_dp_per_unit AS (SELECT _dp_u, least(count(*), 3) AS _dp_s0 FROM _dp_r GROUP BY _dp_u)
SELECT sum(_dp_s0) AS _dp_s0 FROM _dp_per_unit
