-- SELECT SUM(age), AVG(age) FROM people
SELECT sum(toDecimal128((least(coalesce(greatest(coalesce("age", 18), 18), 100), 100)), 0)) AS _dp_s0, count(*) AS _dp_s1, count(("age")) AS _dp_s2 FROM "people"
-- integer form
SELECT sum(toDecimal128((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 18), 100) END), 0)) AS _dp_s0, count(*) AS _dp_s1, count((CASE WHEN "age" IS NULL THEN NULL ELSE least(greatest("age", 18), 100) END)) AS _dp_s2 FROM "people"
