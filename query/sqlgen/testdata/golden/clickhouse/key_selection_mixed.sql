-- SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education
SELECT "sex" AS _dp_k0, "education" AS _dp_k1, count(*) AS _dp_s0 FROM "adult" WHERE "sex" IN ('Female', 'Male') GROUP BY _dp_k0, _dp_k1
