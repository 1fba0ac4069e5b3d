package enginetest

// capabilityCases are battery cases over constructs that engines read
// differently unless dpstat spells them one way for all (docs/engines.md,
// "What each engine supports"): every engine must give the same answer,
// the one written here, or refuse before the charge. glyphs (glyphs.csv)
// has one row per person (all kept by the bounds): w holds 4-byte UTF-8
// characters (😀, 𝄞) and non-ASCII letters beside their ASCII look-alikes
// (Ÿes, ÿes, YES; Ábc, ábc), f the subnormals ±2^-1074 and 1e-310, d a
// date per person (NULL for person 9).
var capabilityCases = []Case{
	// substr counts code points on every engine, 4-byte ones included
	// (ClickHouse 18.16's substringUTF8 cuts them into bytes, and takes
	// no two-argument form).
	{Name: "substr of 4-byte characters", SQL: "SELECT COUNT(*) FILTER (WHERE substr(w, 3) = 'b😀c'), COUNT(*) FILTER (WHERE substr(w, 2, 1) = '😀'), COUNT(*) FILTER (WHERE substr(w, 1, 1) = '𝄞'), SUM(length(substr(w, 2))) FROM glyphs",
		Want: "1 2 1 21"},
	{Name: "substr keys of 4-byte characters", SQL: "SELECT substr(w, 2, 2) AS s, COUNT(*) FROM glyphs GROUP BY s",
		Want: "ES 1; bc 2; es 2; mo 1; 𝄞b 1; 😀b 1; 😀😀 1"},
	{Name: "substr at its limits", SQL: "SELECT COUNT(*) FILTER (WHERE substr(w, 2147483647) = ''), COUNT(*) FILTER (WHERE substr(w, 1, 0) = ''), COUNT(*) FILTER (WHERE substr(w, 1, 2147483647) = w) FROM glyphs",
		Want: "9 9 9"},
	{Name: "text functions over 4-byte characters", SQL: "SELECT COUNT(*) FILTER (WHERE starts_with(w, '😀')), COUNT(*) FILTER (WHERE w LIKE '%😀%'), COUNT(*) FILTER (WHERE w IN ('𝄞mol', 'ÿes')), SUM(length(concat(w, '𝄞'))), SUM(length(w || '😀')), COUNT(*) FILTER (WHERE trim(w) = w) FROM glyphs",
		Want: "1 2 2 39 39 9"},
	// Go lists the images of the keys as the engines compute them.
	{Name: "text keys of 4-byte characters", SQL: "SELECT substr(w, 3) AS s, lower(w) AS lw, COUNT(*) FROM glyphs GROUP BY s, lw HAVING COUNT(*) > 0",
		Want: "S yes 1; b a𝄞b 1; b😀c a😀b😀c 1; c Ábc 1; c ábc 1; ol 𝄞mol 1; s ÿes 1; s Ÿes 1; 😀 😀😀😀 1"},
	{Name: "LIKE matches a 4-byte character with _", SQL: "SELECT COUNT(*) FILTER (WHERE w LIKE 'a_b%'), COUNT(*) FILTER (WHERE w LIKE '_😀_') FROM glyphs", Want: "2 1"},
	// ILIKE folds the ASCII letters only, on every engine (as lower and
	// upper do): Ÿ is not ÿ, Á is not á; ClickHouse 18.16 has no ILIKE.
	{Name: "ILIKE over non-ASCII letters", SQL: "SELECT COUNT(*) FILTER (WHERE w ILIKE 'ÿ%'), COUNT(*) FILTER (WHERE w ILIKE 'yes'), COUNT(*) FILTER (WHERE w ILIKE 'ÁBC'), COUNT(*) FILTER (WHERE w NOT ILIKE '%B%'), COUNT(*) FILTER (WHERE w ILIKE 'A_B%') FROM glyphs",
		Want: "1 1 1 5 2"},
	{Name: "ILIKE in a key", SQL: "SELECT CASE WHEN w ILIKE '%yes' THEN 'y' ELSE 'n' END AS k, COUNT(*) FROM glyphs GROUP BY k", Want: "y 1; n 8"},
	// Subnormal literals read exactly on every engine (ClickHouse 18.16
	// refuses them as a syntax error).
	{Name: "subnormal literals", SQL: "SELECT COUNT(*) FILTER (WHERE f > 4.9e-324), COUNT(*) FILTER (WHERE f >= 5e-324), COUNT(*) FILTER (WHERE f < -5e-324), COUNT(*) FILTER (WHERE f > 0 AND f < 2.225073858507201e-308), COUNT(*) FILTER (WHERE f BETWEEN -4.9e-324 AND 4.9e-324) FROM glyphs",
		Want: "3 4 1 2 3"},
	{Name: "subnormal literals in expressions", SQL: "SELECT SUM(GREATEST(f, 5e-324)), COUNT(*) FILTER (WHERE LEAST(f, -4.9e-324) < 0) FROM glyphs", Want: "3.5 9"},
	// GREATEST and LEAST of a per-person pre-aggregate of a date (a
	// number of days: 19814 is 2024-04-01) and an integer literal
	// (ClickHouse typed them Float64 and UInt64).
	{Name: "greatest of a date pre-aggregate", SQL: "WITH s AS (SELECT pid, MIN(d) AS first FROM glyphs GROUP BY pid) SELECT COUNT(*) FILTER (WHERE GREATEST(first, 19814) > 19844), COUNT(*) FILTER (WHERE LEAST(first, 19783) < 19754) FROM s",
		Want: "4 1"},
	{Name: "greatest of a date pre-aggregate as a key", SQL: "WITH s AS (SELECT pid, MIN(d) AS first FROM glyphs GROUP BY pid) SELECT CASE WHEN GREATEST(first, 19814) > 19844 THEN 1 ELSE 0 END AS late, SUM(LEAST(first, 19783) - 19700) FROM s GROUP BY late",
		Want: "1 332; 0 339"},
	// Person 9 has no date: GREATEST skips the NULL (SQL), so it counts
	// GREATEST(NULL, 1) - 19700 = -19699 beside the others' 1,088.
	{Name: "greatest of a pre-aggregate's date and count", SQL: "WITH s AS (SELECT pid, MIN(d) AS first, COUNT(*) AS n FROM glyphs GROUP BY pid) SELECT SUM(LEAST(GREATEST(first, n), 19900) - 19700) FROM s",
		Want: "-18611"},
	// Date functions of a per-person MIN of a timestamp (ClickHouse
	// clamped its Float64 with UInt64 bounds).
	{Name: "hours of a timestamp pre-aggregate", SQL: "WITH s AS (SELECT pid, MIN(ts) AS first FROM glyphs GROUP BY pid) SELECT EXTRACT(hour FROM first) AS h, COUNT(*) FROM s GROUP BY h HAVING COUNT(*) > 0",
		Want: "0 1; 6 1; 8 1; 10 1; 11 1; 12 1; 18 1; 23 1"},
	{Name: "quarters of a timestamp pre-aggregate", SQL: "WITH s AS (SELECT pid, MAX(ts) AS last FROM glyphs GROUP BY pid) SELECT date_trunc('quarter', last) AS q, COUNT(*) FROM s GROUP BY q",
		Want: "2024-01-01 00:00:00 3; 2024-04-01 00:00:00 3; 2024-07-01 00:00:00 2; 2024-10-01 00:00:00 0"},
}

// refusedOnCases are answered by some engines and refused, before the
// charge, by the others, which declare that they cannot run them as the
// others do.
var refusedOnCases = []Case{
	{Name: "two public joins", SQL: "SELECT COUNT(*), COUNT(z.zone) FROM visits v JOIN regions r ON v.region = r.region LEFT JOIN zones z ON v.region = z.region",
		Want: "63 42", RefusedOn: map[string]string{"clickhouse": "joins one table per SELECT"}},
}
