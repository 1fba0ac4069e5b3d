-- SELECT SUM(euros_spent) FROM visits
WITH _dp_r AS (SELECT "visitor_id" AS _dp_u FROM "visits" WHERE "visitor_id" IS NOT NULL)
SELECT sum(_dp_kept) AS _dp_s0, sum(_dp_dropped) AS _dp_s1 FROM (SELECT least(sum(_dp_m), CAST(1 AS BIGINT)) AS _dp_kept, least(sum(_dp_n) - least(sum(_dp_m), CAST(1 AS BIGINT)), CAST(3 AS BIGINT)) AS _dp_dropped FROM (SELECT _dp_u, CAST(count(*) AS BIGINT) AS _dp_n, least(CAST(count(*) AS BIGINT), CAST(1 AS BIGINT)) AS _dp_m FROM _dp_r GROUP BY _dp_u) AS _dp_per_unit GROUP BY _dp_u) AS _dp_per_person
