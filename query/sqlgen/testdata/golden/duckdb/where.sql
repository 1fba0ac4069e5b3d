-- SELECT COUNT(*) FROM people WHERE (age BETWEEN 20 AND 30 OR city IN ('A', 'it''s')) AND NOT flag AND score IS NOT NULL
WITH _dp_r AS (SELECT 1 AS _dp_one FROM "people" WHERE ((("age" BETWEEN 20 AND 30) OR ("city" IN ('A', 'it''s'))) AND (NOT ("flag" = TRUE)) AND ("score" IS NOT NULL)))
SELECT count(*) AS _dp_s0 FROM _dp_r
