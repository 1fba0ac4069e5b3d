-- SELECT COUNT(*) FROM people WHERE (age BETWEEN 20 AND 30 OR city IN ('A', 'it''s')) AND NOT flag AND score IS NOT NULL
WITH r AS (SELECT 1 AS one FROM "people" WHERE ((("age" BETWEEN 20 AND 30) OR ("city" IN ('A', 'it''s'))) AND (NOT ("flag" = TRUE)) AND ("score" IS NOT NULL)))
SELECT count(*) AS s0 FROM r
