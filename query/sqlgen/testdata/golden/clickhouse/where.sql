-- SELECT COUNT(*) FROM people WHERE (age BETWEEN 20 AND 30 OR city IN ('A', 'it''s')) AND NOT flag AND score IS NOT NULL
SELECT count(*) AS _dp_s0 FROM "people" WHERE ((("age" BETWEEN 20 AND 30) OR ("city" IN ('A', 'it\'s'))) AND (NOT ("flag" = 1)) AND ("score" IS NOT NULL))
