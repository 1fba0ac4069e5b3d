-- SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex
SELECT "sex" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((least(coalesce(greatest(coalesce("hours_per_week", 1), 1), 99), 99)), 0)) AS _dp_s1, count(("hours_per_week")) AS _dp_s2 FROM "adult" WHERE "sex" IN ('Female', 'Male') GROUP BY _dp_k0
-- integer form
SELECT "sex" AS _dp_k0, count(*) AS _dp_s0, sum(toDecimal128((CASE WHEN "hours_per_week" IS NULL THEN NULL ELSE least(greatest("hours_per_week", 1), 99) END), 0)) AS _dp_s1, count((CASE WHEN "hours_per_week" IS NULL THEN NULL ELSE least(greatest("hours_per_week", 1), 99) END)) AS _dp_s2 FROM "adult" WHERE "sex" IN ('Female', 'Male') GROUP BY _dp_k0
