-- SELECT day, COUNT(DISTINCT euros_spent) FROM visits GROUP BY day
-- histogram 0
WITH r AS (SELECT "visitor_id" AS u, "day" AS k0, "euros_spent" AS b FROM "visits" WHERE "visitor_id" IS NOT NULL AND "day" IN (1, 2, 3, 4, 5, 6, 7) AND "euros_spent" IS NOT NULL),
r_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u, k0 ORDER BY random()) AS rn FROM r) AS numbered WHERE rn <= 1),
unit_groups AS (SELECT u, k0 FROM r_bounded GROUP BY u, k0),
unit_groups_bounded AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY u ORDER BY random()) AS rn FROM unit_groups) AS numbered WHERE rn <= 3)
SELECT k0, CAST(0 AS bigint) AS b, count(DISTINCT b) AS c FROM r_bounded JOIN (SELECT u AS pair_u, k0 AS pair_k0 FROM unit_groups_bounded) AS pairs ON u = pair_u AND k0 IS NOT DISTINCT FROM pair_k0 GROUP BY k0
