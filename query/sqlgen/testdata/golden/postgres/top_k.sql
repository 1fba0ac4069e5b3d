-- SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 2
WITH r AS (SELECT "race" AS k0 FROM "adult" WHERE "race" IN ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other'))
SELECT k0, count(*) AS s0 FROM r GROUP BY k0
