-- SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 2
WITH _dp_r AS (SELECT "race" AS _dp_k0 FROM "adult" WHERE "race" IN ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other'))
SELECT _dp_k0, count(*) AS _dp_s0 FROM _dp_r GROUP BY _dp_k0
