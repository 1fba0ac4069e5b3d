-- SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education
WITH r AS (SELECT "sex" AS k0, "education" AS k1 FROM "adult" WHERE "sex" IN ('Female', 'Male'))
SELECT k0, k1, count(*) AS s0 FROM r GROUP BY k0, k1
