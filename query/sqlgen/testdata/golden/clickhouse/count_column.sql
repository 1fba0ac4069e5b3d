-- SELECT COUNT(age) FROM people
SELECT count(("age")) AS _dp_s0 FROM "people"
