-- SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education
WITH _dp_r AS (SELECT "sex" AS _dp_k0, "education" AS _dp_k1 FROM "adult" WHERE "sex" IN ('Female', 'Male'))
SELECT _dp_k0, _dp_k1, count(*) AS _dp_s0 FROM _dp_r GROUP BY _dp_k0, _dp_k1
