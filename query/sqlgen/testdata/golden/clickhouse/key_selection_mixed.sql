-- SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education
SELECT "sex" AS k0, "education" AS k1, count(*) AS s0 FROM "adult" WHERE "sex" IN ('Female', 'Male') GROUP BY k0, k1
