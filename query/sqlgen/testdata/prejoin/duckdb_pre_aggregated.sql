-- SELECT COUNT(*) FROM (SELECT x.pid, COUNT(*) AS n FROM t x JOIN p y ON x.pid = y.pid GROUP BY x.pid) s WHERE n >= 2
WITH "_dp_t0_capped" AS MATERIALIZED (SELECT "pid", "day", "v" FROM "t" AS "_dp_t0" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 6),
"_dp_t1_capped" AS MATERIALIZED (SELECT "pid", "kind" FROM "p" AS "_dp_t1" WHERE "pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid" ORDER BY random()) <= 6),
_dp_r AS (SELECT 1 AS _dp_one FROM (SELECT "_dp_t0"."pid" AS _dp_p0, CAST(count(*) AS BIGINT) AS _dp_p1 FROM "_dp_t0_capped" AS "_dp_t0" JOIN "_dp_t1_capped" AS "_dp_t1" ON "_dp_t0"."pid" = "_dp_t1"."pid" WHERE "_dp_t0"."pid" IS NOT NULL GROUP BY "_dp_t0"."pid") AS "_dp_t0" WHERE (_dp_p1 >= 2))
SELECT count(*) AS _dp_s0 FROM _dp_r
