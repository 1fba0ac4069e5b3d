-- SELECT COUNT(age) FROM people
WITH _dp_r AS (SELECT "age" AS _dp_v0 FROM "people")
SELECT count(_dp_v0) AS _dp_s0 FROM _dp_r
