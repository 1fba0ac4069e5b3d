"""dpstat: a Python client for a dpstat server's HTTP API.

Standard library only; pandas is used by Result.to_pandas() when installed.

    import dpstat
    c = dpstat.Client("http://127.0.0.1:8080", token=TOKEN)
    r = c.query("SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex", epsilon=0.5)
    r.columns, r.rows, r.intervals, r.cost.epsilon, r.budget
    r.to_pandas()                  # n, n_low, n_high
    c.preview(sql, epsilon=0.5)    # cost and expected error, nothing charged
    c.budget()                     # what is spent and left, per table

Errors raise dpstat.Error; dpstat.BudgetExceeded and dpstat.QueryRefused are
its subclasses. Each carries the server's code and message.
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

__all__ = ["Client", "Result", "Cost", "BudgetLeft", "Budget", "Error", "BudgetExceeded", "QueryRefused"]
__version__ = "0.1.0"


class Error(Exception):
    """An error from the dpstat server (or from reaching it).

    code is the server's error code (e.g. "refused", "budget_exceeded",
    "unauthorized"; "unreachable" when no answer came), message its text and
    status the HTTP status (0 when there was none).
    """

    def __init__(self, code: str, message: str, status: int = 0):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class BudgetExceeded(Error):
    """The query's cost does not fit in the budget left; nothing was charged."""


class QueryRefused(Error):
    """The server refused the query before reading any data; nothing was
    charged. code says why: refused, syntax_error, unknown_table,
    unknown_column, not_granted or too_large."""


_REFUSALS = {"refused", "syntax_error", "unknown_table", "unknown_column", "not_granted", "too_large"}


@dataclass(frozen=True)
class Cost:
    """A privacy cost (ε, δ)."""

    epsilon: float
    delta: float

    @classmethod
    def _from(cls, d: Optional[dict]) -> "Cost":
        d = d or {}
        return cls(float(d.get("epsilon", 0)), float(d.get("delta", 0)))

    def __str__(self) -> str:
        return f"ε={_fmt(self.epsilon)}, δ={_fmt(self.delta)}"


@dataclass(frozen=True)
class BudgetLeft:
    """The budget on the queried table after a query: spent and remaining."""

    spent: Cost
    remaining: Cost
    rule: str = ""

    def __str__(self) -> str:
        return f"spent {self.spent}, remaining {self.remaining}"


@dataclass(frozen=True)
class Budget:
    """An analyst's budget on one table."""

    table: str
    limit: Cost
    spent: Cost
    remaining: Cost
    releases: int
    rule: str = ""

    def __str__(self) -> str:
        return f"{self.table}: spent {self.spent} of {self.limit}, remaining {self.remaining} ({self.releases} releases)"


@dataclass
class Result:
    """An answer: columns, rows and, for each value, its interval.

    intervals has the shape of rows: a (low, high) pair for each noisy value
    and None for group keys. For a preview (dry_run), rows hold None and the
    intervals are (-h, h) half-widths around zero. cost is what was charged
    (zero for a preview or a repeated query) and budget the table's budget
    after it.
    """

    columns: List[str]
    rows: List[list]
    intervals: List[List[Optional[Tuple[float, float]]]]
    cost: Cost
    budget: BudgetLeft
    confidence: float = 0.95
    table: str = ""
    notes: List[str] = field(default_factory=list)
    release_id: int = 0
    repeated: bool = False
    dry_run: bool = False
    # For a preview: None, or {"kind": ..., "reason": ...} when running the
    # query now would be refused (its cost does not fit in the budget left).
    would_refuse: Optional[dict] = None
    # With query(..., dropped=True) over a table with a privacy unit: the DP
    # estimate of the rows contribution bounding dropped, {"share", "low",
    # "high", "kept", "dropped", "cap_per_person", "epsilon"}; else None.
    dropped: Optional[dict] = None

    @classmethod
    def _from(cls, d: dict) -> "Result":
        rows = [list(r) for r in d.get("rows") or []]
        ci = d.get("ci") or [[None] * len(r) for r in rows]
        intervals = [[tuple(c) if c is not None else None for c in r] for r in ci]
        b = d.get("budget") or {}
        return cls(
            columns=list(d.get("columns") or []),
            rows=rows,
            intervals=intervals,
            cost=Cost._from(d.get("cost")),
            budget=BudgetLeft(Cost._from(b.get("spent")), Cost._from(b.get("remaining")), b.get("rule", "")),
            confidence=float(d.get("confidence") or 0.95),
            table=d.get("table", ""),
            notes=list(d.get("notes") or []),
            release_id=int(d.get("release_id") or 0),
            repeated=bool(d.get("repeated")),
            dry_run=bool(d.get("dry_run")),
            would_refuse=d.get("would_refuse"),
            dropped=d.get("dropped"),
        )

    def noisy(self) -> List[bool]:
        """For each column, whether it holds noisy values (with intervals)."""
        return [any(r[j] is not None for r in self.intervals) for j in range(len(self.columns))]

    def records(self) -> List[dict]:
        """The rows as dicts; each noisy column c adds c_low and c_high."""
        noisy = self.noisy()
        out = []
        for row, ivs in zip(self.rows, self.intervals):
            rec = {}
            for j, name in enumerate(self.columns):
                rec[name] = row[j]
                if noisy[j]:
                    low, high = ivs[j] if ivs[j] is not None else (None, None)
                    rec[name + "_low"], rec[name + "_high"] = low, high
            out.append(rec)
        return out

    def to_pandas(self):
        """A pandas DataFrame: the columns, and after each noisy column c its
        interval as c_low and c_high. Needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise ImportError("Result.to_pandas() needs pandas: pip install 'dpstat[pandas]' (or pip install pandas; apt-get install python3-pandas for the system's Python)") from e
        cols = []
        for j, name in enumerate(self.columns):
            cols.append(name)
            if self.noisy()[j]:
                cols += [name + "_low", name + "_high"]
        return pd.DataFrame.from_records(self.records(), columns=cols)

    def __repr__(self) -> str:
        head = " | ".join(self.columns)
        lines = [head, "-" * len(head)]
        for row, ivs in zip(self.rows, self.intervals):
            cells = []
            for v, iv in zip(row, ivs):
                cells.append(_fmt(v) if iv is None else f"{_fmt(v)} [{_fmt(iv[0])}, {_fmt(iv[1])}]")
            lines.append(" | ".join(cells))
        kind = "preview" if self.dry_run else "cost"
        lines.append(f"{kind}: {self.cost}; budget on {self.table}: {self.budget}")
        return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Client:
    """A connection to a dpstat server's HTTP API.

    url is the server's address (default $DPSTAT_URL), token the analyst's
    token (default $DPSTAT_TOKEN); timeout is in seconds.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60):
        url = url or os.environ.get("DPSTAT_URL", "")
        token = token or os.environ.get("DPSTAT_TOKEN", "")
        if not url:
            raise ValueError("no server URL: pass url=\"http://HOST:PORT\" or set DPSTAT_URL")
        if not token:
            raise ValueError("no token: pass token=\"dps_...\" (from dpstat analyst add) or set DPSTAT_TOKEN")
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"server URL {url!r}: want http://HOST:PORT or https://HOST:PORT")
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"dpstat.Client({self.url!r})"

    def _request(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self._token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                err = json.loads(raw).get("error") or {}
            except ValueError:
                err = {}
            code = err.get("code") or f"http_{e.code}"
            message = err.get("message") or raw.strip() or e.reason
            if code == "budget_exceeded":
                raise BudgetExceeded(code, message, e.code) from None
            if code in _REFUSALS:
                raise QueryRefused(code, message, e.code) from None
            raise Error(code, message, e.code) from None
        except urllib.error.URLError as e:
            raise Error("unreachable", f"cannot reach {self.url}: {e.reason}") from None

    @staticmethod
    def _query_body(sql: str, epsilon, delta, confidence, dry_run: bool, dropped: bool = False) -> dict:
        if not isinstance(sql, str) or not sql.strip():
            raise ValueError("sql must be a non-empty string holding one SELECT")
        body = {"sql": sql}
        for name, v in (("epsilon", epsilon), ("delta", delta), ("confidence", confidence)):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"{name}={v!r}: want a number, e.g. {name}=0.5")
            body[name] = float(v)
        if dry_run:
            body["dry_run"] = True
        if dropped:
            body["dropped"] = True
        return body

    def query(self, sql: str, epsilon: Optional[float] = None, delta: Optional[float] = None,
              confidence: Optional[float] = None, dropped: bool = False) -> Result:
        """Answer sql, charging epsilon (and delta) to the table's budget.

        dropped=True also estimates, with 10% of epsilon, the share of rows
        contribution bounding dropped (Result.dropped and a note).
        Raises BudgetExceeded if the cost does not fit, QueryRefused if the
        server refuses the query; neither charges anything.
        """
        return Result._from(self._request("POST", "/v1/query", self._query_body(sql, epsilon, delta, confidence, False, dropped)))

    def preview(self, sql: str, epsilon: Optional[float] = None, delta: Optional[float] = None,
                confidence: Optional[float] = None) -> Result:
        """The cost of sql and its intervals' half-widths, without reading
        data or charging anything."""
        return Result._from(self._request("POST", "/v1/query", self._query_body(sql, epsilon, delta, confidence, True)))

    def budget(self, table: Optional[str] = None):
        """The analyst's budgets: a list of Budget, or the one on table."""
        out = []
        for b in self._request("GET", "/v1/budget").get("budgets") or []:
            out.append(Budget(b.get("table", ""), Cost._from(b.get("limit")), Cost._from(b.get("spent")),
                              Cost._from(b.get("remaining")), int(b.get("releases") or 0), b.get("rule", "")))
        if table is None:
            return out
        for b in out:
            if b.table == table:
                return b
        raise Error("not_granted", f"no budget on table {table!r}; budgets on: {', '.join(b.table for b in out) or 'none'}")

    def tables(self) -> List[dict]:
        """The tables the analyst may query, with their declared columns."""
        return list(self._request("GET", "/v1/tables").get("tables") or [])

    def history(self, limit: int = 50) -> List[dict]:
        """The analyst's releases, newest first."""
        return list(self._request("GET", f"/v1/history?limit={int(limit)}").get("releases") or [])
