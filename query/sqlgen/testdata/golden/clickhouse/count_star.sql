-- SELECT COUNT(*) FROM people
SELECT count(*) AS s0 FROM "people"
