"""SQLAlchemy (psycopg2 dialect), its inspector, and pandas.read_sql with an
engine against dpstat serve. Environment as psycopg_clients.py."""
import os

import pandas as pd
import sqlalchemy as sa

url = "postgresql+psycopg2://alice:{}@{}:{}/dpstat".format(
    os.environ["DPSTAT_TOKEN"], os.environ["DPSTAT_PG_HOST"], os.environ["DPSTAT_PG_PORT"])


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok", what.split(":")[0])


engine = sa.create_engine(url)
with engine.connect() as conn:
    conn.execute(sa.text("SET dpstat.epsilon = 0.5"))
    rows = conn.execute(sa.text("SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex")).fetchall()
    check(sorted(r[0] for r in rows) == ["Female", "Male"], f"SQLAlchemy connect and query: {rows}")
    rows = conn.execute(sa.text("SELECT COUNT(*) AS n FROM adult WHERE age > :age"), {"age": 60}).fetchall()
    check(isinstance(rows[0][0], int), f"SQLAlchemy bound parameter: {rows}")

insp = sa.inspect(engine)
check(sorted(insp.get_table_names()) == ["adult", "visits"], f"inspector tables: {insp.get_table_names()}")
check("public" in insp.get_schema_names(), f"inspector schemas: {insp.get_schema_names()}")
check(insp.has_table("adult") and not insp.has_table("secrets"), "inspector has_table")
cols = {c["name"]: c for c in insp.get_columns("adult")}
check(isinstance(cols["age"]["type"], sa.BigInteger), f"inspector age is BIGINT: {cols['age']}")
check(isinstance(cols["sex"]["type"], sa.Text), f"inspector sex is TEXT: {cols['sex']}")
check(cols["age"]["comment"] == "int in [17, 90]", f"inspector comment holds the declared bounds: {cols['age']}")
check(cols["workclass"]["nullable"] and not cols["age"]["nullable"], "inspector nullability")
check(insp.get_pk_constraint("adult")["constrained_columns"] == [], "inspector primary key (none)")
check(insp.get_foreign_keys("adult") == [] and insp.get_indexes("adult") == [], "inspector keys and indexes (none)")

meta = sa.MetaData()
visits = sa.Table("visits", meta, autoload_with=engine)
check([c.name for c in visits.columns] == ["visitor_id", "day", "minutes_spent", "euros_spent"],
      f"table reflection: {visits.columns}")

df = pd.read_sql("SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM adult GROUP BY sex", engine)
check(list(df.columns) == ["sex", "n", "mean_age"], f"pandas.read_sql with an engine: {df}")
check(str(df["n"].dtype) == "int64" and str(df["mean_age"].dtype) == "float64", f"pandas dtypes: {df.dtypes}")
df = pd.read_sql(sa.text("SELECT COUNT(*) AS n FROM adult WHERE sex = :s"), engine, params={"s": "Female"})
check(len(df) == 1, "pandas.read_sql with parameters")
df = pd.read_sql("SELECT race, AVG(hours_per_week) AS h FROM adult GROUP BY race", url)
check(len(df) == 5 and str(df["h"].dtype) == "float64", f"pandas.read_sql with an engine URL: {df}")

# Session settings at connect time (libpq's options), as SQLAlchemy and
# pandas users set them: the query spends them, SHOW reports them.
with sa.create_engine(url, poolclass=sa.pool.NullPool).connect() as conn:
    shown = conn.execute(sa.text("SHOW dpstat.epsilon")).scalar()
    check(shown == "1", f"SHOW dpstat.epsilon without a setting is the default ε: {shown}")
cheap = sa.create_engine(url, connect_args={"options": "-c dpstat.epsilon=0.05 -c dpstat.confidence=0.9"})
with cheap.connect() as conn:
    shown = conn.execute(sa.text("SHOW dpstat.epsilon")).scalar()
    check(shown == "0.05", f"options='-c dpstat.epsilon=0.05' is in force: {shown}")
    shown = conn.execute(sa.text("SHOW dpstat.confidence")).scalar()
    check(shown == "0.9", f"options='-c dpstat.confidence=0.9' is in force: {shown}")
df = pd.read_sql("SELECT COUNT(*) AS n FROM adult", cheap)
check(len(df) == 1, f"pandas.read_sql with a connect-time ε: {df}")
try:
    with sa.create_engine(url, connect_args={"options": "-c dpstat.epsilom=0.05"}).connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    check(False, "a misspelt connect-time setting is refused")
except sa.exc.OperationalError as e:
    check("dpstat.epsilon" in str(e) and "dpstat.epsilom" in str(e), f"a misspelt connect-time setting is refused: {e}")
