-- SELECT COUNT(*) FROM people
WITH _dp_r AS (SELECT 1 AS _dp_one FROM "people")
SELECT count(*) AS _dp_s0 FROM _dp_r
