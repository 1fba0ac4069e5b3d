-- SELECT COUNT(*) FROM people
SELECT count(*) AS _dp_s0 FROM "people"
