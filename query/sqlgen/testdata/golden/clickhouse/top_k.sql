-- SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 2
SELECT "race" AS _dp_k0, count(*) AS _dp_s0 FROM "adult" WHERE "race" IN ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other') GROUP BY _dp_k0
