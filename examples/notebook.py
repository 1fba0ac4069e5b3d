"""A first analysis with dpstat from Python, as one would run it in a notebook.

Start a server on the example catalog and create an analyst (README.md,
"Python"), then:

    pip install ./clients/python
    DPSTAT_URL=http://127.0.0.1:8080 DPSTAT_TOKEN=dps_... python3 examples/notebook.py

It previews a query's cost, runs it, plots the answer with its intervals as
error bars (hours_by_race.png) and prints the budget left. Each cell
below is one notebook cell.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")  # draw to a file; in a notebook, drop this line
import matplotlib.pyplot as plt  # noqa: E402

import dpstat  # noqa: E402

# %% Connect with the analyst's token.
client = dpstat.Client(os.environ.get("DPSTAT_URL", "http://127.0.0.1:8080"), token=os.environ.get("DPSTAT_TOKEN"))

# %% Preview: what will it cost, and how wide will the intervals be? Nothing is charged.
sql = """
SELECT race, COUNT(*) AS people, AVG(hours_per_week) AS hours
FROM adult
GROUP BY race
"""
preview = client.preview(sql, epsilon=0.5)
print(f"cost {preview.cost}; each count within ±{preview.intervals[0][1][1]:.0f} at {preview.confidence:.0%} confidence")

# %% Run it: the answer is charged to the budget before it is released.
try:
    result = client.query(sql, epsilon=0.5)
except dpstat.BudgetExceeded as e:
    sys.exit(f"not enough budget left: {e.message}")
except dpstat.QueryRefused as e:
    sys.exit(f"the server refused the query ({e.code}): {e.message}")
df = result.to_pandas().sort_values("hours")
print(df.to_string(index=False))

# %% Plot the average hours with their 95% intervals as error bars.
fig, ax = plt.subplots(figsize=(7, 3.5))
below = df["hours"] - df["hours_low"]
above = df["hours_high"] - df["hours"]
ax.barh(df["race"], df["hours"], xerr=[below, above], capsize=4, color="#4c72b0")
ax.set_xlabel(f"average hours per week (noisy; bars: {result.confidence:.0%} intervals)")
ax.set_title(f"adult: hours per week by race, ε = {result.cost.epsilon:g}")
fig.tight_layout()
out = os.environ.get("DPSTAT_PLOT", "hours_by_race.png")
fig.savefig(out, dpi=120)
print(f"plot saved to {out}")

# %% What is left to spend on this table?
budget = client.budget("adult")
print(f"budget on adult: spent ε={budget.spent.epsilon:g} of {budget.limit.epsilon:g}, "
      f"{budget.remaining.epsilon:g} left ({budget.releases} releases)")
