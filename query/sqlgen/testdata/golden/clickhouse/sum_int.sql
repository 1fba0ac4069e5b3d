-- SELECT SUM(age) FROM people
SELECT sum(toDecimal128((least(coalesce(greatest(coalesce("age", toInt64(18)), coalesce(toInt64(18), "age")), toInt64(100)), coalesce(toInt64(100), greatest(coalesce("age", toInt64(18)), coalesce(toInt64(18), "age"))))), 0)) AS _dp_s0, count(*) AS _dp_s1, count(("age")) AS _dp_s2 FROM "people"
-- integer form
SELECT sum(toDecimal128((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(18)), toInt64(100)) END), 0)) AS _dp_s0, count(*) AS _dp_s1, count((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", toInt64(18)), toInt64(100)) END)) AS _dp_s2 FROM "people"
