-- SELECT education, MEDIAN(age) FROM adult GROUP BY education
WITH _dp_r AS (SELECT "education" AS _dp_k0, "age" AS _dp_v1 FROM "adult")
SELECT _dp_k0, count(*) AS _dp_s0, count(_dp_v1) AS _dp_s1 FROM _dp_r GROUP BY _dp_k0
-- histogram 0
WITH _dp_r AS (SELECT "education" AS _dp_k0, CAST(least(greatest(floor((least(greatest("age", CAST(17.0 AS double precision)), CAST(90.0 AS double precision)) - CAST(17.0 AS double precision)) / CAST(1.0 AS double precision)), 0), 73) AS integer) AS _dp_b FROM "adult" WHERE "age" IS NOT NULL)
SELECT _dp_k0, _dp_b, count(*) AS _dp_c FROM _dp_r GROUP BY _dp_k0, _dp_b
