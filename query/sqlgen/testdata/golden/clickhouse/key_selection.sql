-- SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education
SELECT "education" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((least(coalesce(greatest(coalesce("age", 17), 17), 90), 90)), 0)) AS _dp_s1, count(("age")) AS _dp_s2 FROM "adult" GROUP BY _dp_k0
-- integer form
SELECT "education" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 17), 90) END), 0)) AS _dp_s1, count((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 17), 90) END)) AS _dp_s2 FROM "adult" GROUP BY _dp_k0
