-- SELECT "city", COUNT(*) FROM "people" WHERE "city" <> 'x"y' GROUP BY "city"
SELECT "city" AS _dp_k0, count(*) AS _dp_s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND ("city" <> 'x\x22y') GROUP BY _dp_k0
