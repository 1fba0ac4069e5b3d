-- SELECT "city", COUNT(*) FROM "people" WHERE "city" <> 'x"y' GROUP BY "city"
WITH r AS (SELECT "city" AS k0 FROM "people" WHERE "city" IN ('A', 'B', 'D') AND ("city" <> 'x"y'))
SELECT k0, count(*) AS s0 FROM r GROUP BY k0
