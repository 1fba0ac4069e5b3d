-- SELECT "city", COUNT(*) FROM "people" WHERE "city" <> 'x"y' GROUP BY "city"
SELECT "city" AS k0, count(*) AS s0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND ("city" <> 'x\x22y') GROUP BY k0
