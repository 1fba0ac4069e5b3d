-- SELECT "city", COUNT(*) FROM "people" WHERE "city" <> 'x"y' GROUP BY "city"
WITH _dp_r AS (SELECT "city" AS _dp_k0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND ("city" <> 'x"y'))
SELECT _dp_k0, count(*) AS _dp_s0 FROM _dp_r GROUP BY _dp_k0
