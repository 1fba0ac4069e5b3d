-- SELECT SUM(age) FROM adult WHERE age BETWEEN 30 AND 60
SELECT sum(toDecimal128((least(coalesce(greatest(coalesce("age", toInt64(30)), coalesce(toInt64(30), "age")), toInt64(60)), coalesce(toInt64(60), greatest(coalesce("age", toInt64(30)), coalesce(toInt64(30), "age"))))), 0)) AS _dp_s0, count(*) AS _dp_s1, count(("age")) AS _dp_s2 FROM "adult" WHERE ("age" BETWEEN 30 AND 60)
-- integer form
SELECT sum(toDecimal128((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(30)), toInt64(60)) END), 0)) AS _dp_s0, count(*) AS _dp_s1, count((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(30)), toInt64(60)) END)) AS _dp_s2 FROM "adult" WHERE ("age" BETWEEN 30 AND 60)
