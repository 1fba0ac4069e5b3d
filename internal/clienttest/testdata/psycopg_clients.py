"""psycopg2, psycopg 3 and pandas over psycopg2 against dpstat serve.

Environment: DPSTAT_PG_HOST, DPSTAT_PG_PORT, DPSTAT_TOKEN (analyst alice, a
large budget on adult and visits), DPSTAT_SMALL_TOKEN (analyst small,
epsilon 1 on adult). Prints one "ok ..." line per check; any failure raises.
"""
import os
import warnings

import pandas as pd
import psycopg
import psycopg2

HOST, PORT = os.environ["DPSTAT_PG_HOST"], os.environ["DPSTAT_PG_PORT"]


def dsn(user, token):
    return f"host={HOST} port={PORT} dbname=dpstat user={user} password={token}"


ALICE = dsn("alice", os.environ["DPSTAT_TOKEN"])
SMALL = dsn("small", os.environ["DPSTAT_SMALL_TOKEN"])


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok", what.split(":")[0])


# psycopg2: simple protocol, parameters interpolated by the driver.
with psycopg2.connect(ALICE) as conn:
    cur = conn.cursor()
    cur.execute("SET dpstat.epsilon = 0.5")
    cur.execute("SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM adult GROUP BY sex ORDER BY sex")
    rows = cur.fetchall()
    types = [d.type_code for d in cur.description]
    check([r[0] for r in rows] == ["Female", "Male"], f"psycopg2 groups: {rows}")
    check(types == [25, 20, 701], f"psycopg2 column types text, int8, float8: {types}")
    check(all(isinstance(r[1], int) for r in rows), f"psycopg2 counts are integers: {rows}")
    cur.execute("SELECT COUNT(*) AS n FROM adult WHERE age > %s AND sex = %s", (40, "Female"))
    check(cur.fetchone()[0] > 0, "psycopg2 parameters")
    cur.execute("SELECT COUNT(*) AS n FROM adult WHERE sex = E'it\\'s; here'")
    check(len(cur.fetchall()) == 1, "psycopg2 escape string holding a semicolon is one statement")
    cur.execute("SHOW dpstat.epsilon")
    check(cur.fetchone()[0] == "0.5", "psycopg2 SHOW dpstat.epsilon")
    cur.execute("SHOW TRANSACTION ISOLATION LEVEL")
    check(cur.fetchone()[0] == "read committed", "psycopg2 SHOW TRANSACTION ISOLATION LEVEL")
    for sql, code in [("SELECT * FROM adult", "0A000"), ("SELECT COUNT(*) FROM adult WHERE nope > 1", "42703"),
                      ("SELECT COUNT(*) FROM secrets", "42P01"), ("SELEKT 1", "42601")]:
        try:
            cur.execute(sql)
            raise AssertionError(f"{sql!r} was answered")
        except psycopg2.Error as e:
            conn.rollback()
            check(e.pgcode == code, f"psycopg2 refusal {code}: {sql!r} gave {e.pgcode} {e}")

with psycopg2.connect(SMALL) as conn:
    cur = conn.cursor()
    cur.execute("SET dpstat.epsilon = 5")
    try:
        cur.execute("SELECT COUNT(*) FROM adult")
        raise AssertionError("a query beyond the budget was answered")
    except psycopg2.Error as e:
        check(e.pgcode == "53400", f"psycopg2 budget exceeded 53400: {e.pgcode} {e}")

# pandas over a psycopg2 connection (pandas warns that it tests only
# SQLAlchemy connections; this is the path notebooks use anyway).
warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy")
with psycopg2.connect(ALICE) as conn:
    df = pd.read_sql("SELECT race, COUNT(*) AS n FROM adult GROUP BY race", conn)
    check(list(df.columns) == ["race", "n"] and len(df) >= 1, f"pandas.read_sql over psycopg2: {df}")
    check(str(df["n"].dtype) == "int64", f"pandas count column is int64: {df.dtypes}")

# psycopg 3: server-side prepared statements, typed parameters, binary results.
with psycopg.connect(ALICE, autocommit=True) as conn:
    conn.execute("SET dpstat.epsilon = 0.25")
    seen = []
    for age in (30, 40, 50):
        cur = conn.execute("SELECT COUNT(*) AS n FROM adult WHERE age > %s", (age,), prepare=True)
        seen.append(cur.fetchone()[0])
    check(all(isinstance(n, int) for n in seen), f"psycopg 3 prepared statement executed three times: {seen}")
    cur = conn.execute("SELECT sex, AVG(hours_per_week) AS h FROM adult WHERE sex = %s GROUP BY sex",
                       ("Male",), prepare=True)
    # Groups come from the declared list, so Female is released too (≈ 0 hours).
    check("Male" in [r[0] for r in cur.fetchall()], "psycopg 3 text parameter")
    cur = conn.cursor(binary=True)
    cur.execute("SELECT COUNT(*) AS n, SUM(hours_per_week) AS s FROM adult WHERE age >= %s", (18,))
    n, s = cur.fetchone()
    check(isinstance(n, int) and isinstance(s, float), f"psycopg 3 binary results int8 and float8: {n!r} {s!r}")
    try:
        conn.execute("SELECT * FROM adult WHERE age > %s", (1,), prepare=True)
        raise AssertionError("SELECT * was answered")
    except psycopg.Error as e:
        check(e.sqlstate == "0A000", f"psycopg 3 refusal 0A000: {e.sqlstate} {e}")
    row = conn.execute("SELECT current_schema(), version()").fetchone()
    check(row[0] == "public" and "dpstat" in row[1], f"psycopg 3 current_schema() and version(): {row}")
