-- SELECT COUNT(age) FROM people
SELECT count(("age")) AS s0 FROM "people"
