-- SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education
SELECT "education" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((least(coalesce(greatest(coalesce("age", toInt64(17)), coalesce(toInt64(17), "age")), toInt64(90)), coalesce(toInt64(90), greatest(coalesce("age", toInt64(17)), coalesce(toInt64(17), "age"))))), 0)) AS _dp_s1, count(("age")) AS _dp_s2 FROM "adult" GROUP BY _dp_k0
-- integer form
SELECT "education" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(17)), toInt64(90)) END), 0)) AS _dp_s1, count((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(17)), toInt64(90)) END)) AS _dp_s2 FROM "adult" GROUP BY _dp_k0
