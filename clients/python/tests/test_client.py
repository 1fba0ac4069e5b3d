"""Tests of the dpstat client against a running dpstat serve.

Environment: DPSTAT_URL, DPSTAT_TOKEN (an analyst with a large budget on
adult), DPSTAT_SMALL_TOKEN (an analyst with epsilon 1 on adult). The Go test
internal/clienttest starts the server and runs these with Debian's python3.
"""
import os
import unittest

import dpstat

URL = os.environ.get("DPSTAT_URL")
TOKEN = os.environ.get("DPSTAT_TOKEN")
SMALL = os.environ.get("DPSTAT_SMALL_TOKEN")

GROUPED = "SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM adult GROUP BY sex"


@unittest.skipUnless(URL and TOKEN and SMALL, "set DPSTAT_URL, DPSTAT_TOKEN and DPSTAT_SMALL_TOKEN to a running dpstat serve")
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = dpstat.Client(URL, token=TOKEN)

    def test_query(self):
        before = self.c.budget("adult").spent.epsilon
        r = self.c.query(GROUPED, epsilon=0.5)
        self.assertEqual(r.columns, ["sex", "n", "mean_age"])
        self.assertEqual(sorted(row[0] for row in r.rows), ["Female", "Male"])
        self.assertEqual(len(r.intervals), len(r.rows))
        for row, ivs in zip(r.rows, r.intervals):
            self.assertIsNone(ivs[0], "group keys have no interval")
            low, high = ivs[1]
            self.assertLessEqual(low, high)
            self.assertIsInstance(row[1], int)
        self.assertAlmostEqual(r.cost.epsilon, 0.5)
        self.assertEqual(r.table, "adult")
        self.assertAlmostEqual(self.c.budget("adult").spent.epsilon, before + 0.5)
        self.assertAlmostEqual(r.budget.spent.epsilon, before + 0.5)
        self.assertIn("Female", repr(r))

    def test_dropped(self):
        # adult has no privacy unit: no row is dropped, and the note says so
        # at no cost beyond the query's.
        r = self.c.query("SELECT COUNT(*) FROM adult", epsilon=0.25, dropped=True)
        self.assertIsNone(r.dropped)
        self.assertTrue(any("dropped no row" in n for n in r.notes))
        self.assertAlmostEqual(r.cost.epsilon, 0.25)

    def test_to_pandas(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        df = self.c.query(GROUPED, epsilon=0.5).to_pandas()
        self.assertEqual(list(df.columns), ["sex", "n", "n_low", "n_high", "mean_age", "mean_age_low", "mean_age_high"])
        self.assertEqual(len(df), 2)
        self.assertTrue((df["n_low"] <= df["n_high"]).all())

    def test_preview_charges_nothing(self):
        before = self.c.budget("adult")
        p = self.c.preview(GROUPED, epsilon=2)
        self.assertTrue(p.dry_run)
        self.assertAlmostEqual(p.cost.epsilon, 2)
        self.assertTrue(all(v is None for row in p.rows for v in row[1:]))
        low, high = p.intervals[0][1]
        self.assertAlmostEqual(low, -high)
        after = self.c.budget("adult")
        self.assertEqual((after.spent, after.releases), (before.spent, before.releases))

    def test_budget(self):
        budgets = self.c.budget()
        self.assertIn("adult", [b.table for b in budgets])
        b = self.c.budget("adult")
        self.assertAlmostEqual(b.limit.epsilon, b.spent.epsilon + b.remaining.epsilon)
        with self.assertRaises(dpstat.Error) as e:
            self.c.budget("secrets")
        self.assertEqual(e.exception.code, "not_granted")

    def test_errors(self):
        cases = [
            ("SELECT * FROM adult", dpstat.QueryRefused, "refused"),
            ("SELECT COUNT(*) FROM secrets", dpstat.QueryRefused, "unknown_table"),
            ("SELECT COUNT(*) FROM adult WHERE nope = 1", dpstat.QueryRefused, "unknown_column"),
            ("SELEKT 1", dpstat.QueryRefused, "syntax_error"),
        ]
        for sql, exc, code in cases:
            with self.subTest(sql=sql):
                with self.assertRaises(exc) as e:
                    self.c.query(sql, epsilon=0.1)
                self.assertEqual(e.exception.code, code)
                self.assertEqual(e.exception.status, 400)
                self.assertTrue(e.exception.message)

    def test_budget_exceeded(self):
        small = dpstat.Client(URL, token=SMALL)
        with self.assertRaises(dpstat.BudgetExceeded) as e:
            small.query("SELECT COUNT(*) FROM adult", epsilon=5)
        self.assertIsInstance(e.exception, dpstat.Error)
        self.assertEqual(e.exception.code, "budget_exceeded")
        self.assertEqual(e.exception.status, 409)
        # Its preview is answered, and says the run would be refused.
        p = small.preview("SELECT COUNT(*) FROM adult", epsilon=5)
        self.assertEqual(p.would_refuse["kind"], "budget_exceeded")
        self.assertIn("remaining", p.would_refuse["reason"])
        self.assertIsNone(small.preview("SELECT COUNT(*) FROM adult", epsilon=0.01).would_refuse)

    def test_bad_token_and_arguments(self):
        with self.assertRaises(dpstat.Error) as e:
            dpstat.Client(URL, token="dps_wrong").budget()
        self.assertEqual(e.exception.code, "unauthorized")
        with self.assertRaises(ValueError):
            self.c.query(GROUPED, epsilon="abc")
        with self.assertRaises(ValueError):
            dpstat.Client("localhost:8080", token=TOKEN)
        with self.assertRaises(dpstat.Error) as e:
            dpstat.Client("http://127.0.0.1:1", token=TOKEN, timeout=5).budget()
        self.assertEqual(e.exception.code, "unreachable")

    def test_tables(self):
        tables = {t["name"]: t for t in self.c.tables()}
        self.assertIn("age", [c["name"] for c in tables["adult"]["columns"]])


if __name__ == "__main__":
    unittest.main()
