-- SELECT day, COUNT(DISTINCT visitor_id), COUNT(*) FROM visits GROUP BY day
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0 FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7)),
per_unit AS MATERIALIZED (SELECT u, k0, CAST(1 AS BIGINT) AS s0, least(count(*), 1) AS s1, random() AS h FROM r GROUP BY u, k0),
thresholds AS (SELECT u, min(h, 4)[4] AS t FROM per_unit GROUP BY u),
per_unit_bounded AS (SELECT per_unit.* FROM per_unit JOIN thresholds ON per_unit.u = thresholds.u WHERE t IS NULL OR h < t)
SELECT k0, sum(s0) AS s0, sum(s1) AS s1 FROM per_unit_bounded GROUP BY k0
