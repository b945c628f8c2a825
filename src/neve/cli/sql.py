"""``neve sql``: SQL over neve tables with DuckDB, each table read through neve's
planner with the query's filters on it pushed down.

The query is parsed with sqlglot (DuckDB's dialect) only to learn what to read; DuckDB
runs the query text unchanged. For each ``namespace.table`` the query names:

- **filters**: the conjuncts of the WHERE clause of each SELECT that reads the table
  (without outer joins) that are simple predicates on its columns (comparisons with
  literals, BETWEEN, IN lists, IS [NOT] NULL, LIKE 'prefix%', AND/OR of those) become a
  neve filter, so partition and metrics pruning skip files. A table read in several
  places gets the OR of the places' filters (nothing when one place has none). DuckDB
  applies the whole WHERE again, so a pushed filter only ever needs to keep a superset
  of the rows: predicates whose meaning could differ are not pushed (floating-point
  columns, where DuckDB orders NaN above every number; literals of another type than
  the column; NOT other than IS NOT NULL).
- **columns**: the table's columns the query names (all of them when it has ``*``).

Each table is then read by neve (deletes applied) into Arrow and shown to DuckDB as a
view ``namespace.table``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import expressions as exp

from neve.catalog.base import Catalog
from neve.errors import ExpressionError, ValidationError
from neve.spec.schema import Schema
from neve.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNsType,
    TimestampType,
    TimestamptzNsType,
    TimestamptzType,
)
from neve.table.table import Table

__all__ = ["PlannedRead", "QueryPlan", "explain", "plan_query", "run_query"]

#: A sqlglot syntax node (``exp.Expression``; its base became ``exp.Expr`` in sqlglot
#: 30, so the annotations stay loose to work with both).
Node = Any


@dataclass
class PlannedRead:
    """What neve reads of one table for a query."""

    table: str
    filter: str | None
    columns: list[str] | None
    planned_files: int = 0
    total_files: int = 0


@dataclass
class QueryPlan:
    sql: str
    reads: list[PlannedRead] = field(default_factory=list)


@dataclass
class _Ref:
    """One place the query reads a table."""

    node: exp.Table
    name: str  # namespace.table
    conjuncts: list[str] = field(default_factory=list)


_INT = re.compile(r"^-?\d+$")
_DEC = re.compile(r"^-?(\d+)(?:\.(\d*))?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$")
_TSTZ = re.compile(
    r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$"
)
_COMPARE: dict[type, tuple[str, str]] = {
    exp.EQ: ("=", "="),
    exp.NEQ: ("!=", "!="),
    exp.GT: (">", "<"),
    exp.GTE: (">=", "<="),
    exp.LT: ("<", ">"),
    exp.LTE: ("<=", ">="),
}


def _literal(node: Node) -> tuple[str, str] | None:
    """(kind, text) of a literal: kind ``number``, ``string``, ``date``, ``timestamp``
    or ``bool``; None for anything else."""
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Boolean):
        return "bool", "true" if node.this else "false"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_number:
        return "number", "-" + node.this.name
    if isinstance(node, exp.Literal):
        return ("string" if node.is_string else "number"), node.name
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        to = node.to.this
        if to == exp.DataType.Type.DATE:
            return "date", node.this.name
        if to in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
            return "timestamp", node.this.name
    return None


def _value(ftype: IcebergType, lit: tuple[str, str]) -> str | None:
    """The literal as neve filter text when it means the same for a column of
    ``ftype`` in DuckDB and in neve; None when it may not."""
    kind, text = lit
    quoted = "'" + text.replace("'", "''") + "'"
    if isinstance(ftype, (IntegerType, LongType)):
        return text if kind == "number" and _INT.match(text) else None
    if isinstance(ftype, DecimalType):
        m = _DEC.match(text) if kind == "number" else None
        return text if m and len(m.group(2) or "") <= ftype.scale else None
    if isinstance(ftype, StringType):
        return quoted if kind == "string" else None
    if isinstance(ftype, DateType):
        return quoted if kind in ("string", "date") and _DATE.match(text) else None
    if isinstance(ftype, (TimestampType, TimestampNsType)):
        ok = kind in ("string", "timestamp") and (_TS.match(text) or _DATE.match(text))
        return "'" + text.replace(" ", "T") + "'" if ok else None
    if isinstance(ftype, (TimestamptzType, TimestamptzNsType)):
        ok = kind in ("string", "timestamp") and _TSTZ.match(text)
        return "'" + text.replace(" ", "T") + "'" if ok else None
    if isinstance(ftype, BooleanType):
        return text if kind == "bool" else None
    return None  # floating point, binary, uuid, nested ...: not pushed


class _Translator:
    """Turns a WHERE conjunct on one table into neve filter text (or None)."""

    def __init__(self, schema: Schema, qualifiers: set[str], unqualified: bool) -> None:
        self.columns = {f.name.lower(): f for f in schema.fields}
        self.qualifiers = qualifiers
        self.unqualified = unqualified

    def column(self, node: Node) -> tuple[str, IcebergType] | None:
        if isinstance(node, exp.Paren):
            return self.column(node.this)
        if not isinstance(node, exp.Column) or node.args.get("db") or node.args.get("catalog"):
            return None
        qualifier = node.table
        if qualifier:
            if qualifier.lower() not in self.qualifiers:
                return None
        elif not self.unqualified:
            return None
        f = self.columns.get(node.name.lower())
        if f is None or '"' in f.name:
            return None
        return f'"{f.name}"', f.field_type

    def __call__(self, node: Node) -> str | None:
        if isinstance(node, exp.Paren):
            return self(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            left, right = self(node.left), self(node.right)
            if left is None or right is None:
                return None
            return f"({left} {'and' if isinstance(node, exp.And) else 'or'} {right})"
        if type(node) in _COMPARE:
            op, flipped = _COMPARE[type(node)]
            col, other, sym = self.column(node.left), node.right, op
            if col is None:
                col, other, sym = self.column(node.right), node.left, flipped
            lit = _literal(other)
            if col is None or lit is None:
                return None
            value = _value(col[1], lit)
            if value is None or (isinstance(col[1], BooleanType) and sym not in ("=", "!=")):
                return None
            return f"{col[0]} {sym} {value}"
        if isinstance(node, exp.Between):
            col = self.column(node.this)
            low, high = _literal(node.args["low"]), _literal(node.args["high"])
            if col is None or low is None or high is None:
                return None
            lo, hi = _value(col[1], low), _value(col[1], high)
            if lo is None or hi is None or isinstance(col[1], BooleanType):
                return None
            return f"({col[0]} >= {lo} and {col[0]} <= {hi})"
        if isinstance(node, exp.In):
            col = self.column(node.this)
            if col is None or node.args.get("query") or not node.expressions:
                return None
            values = [_literal(e) for e in node.expressions]
            texts = [None if v is None else _value(col[1], v) for v in values]
            if any(t is None for t in texts):
                return None
            return f"{col[0]} in ({', '.join(t for t in texts if t is not None)})"
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            col = self.column(node.this)
            return None if col is None else f"{col[0]} is null"
        if isinstance(node, exp.Not):
            inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                col = self.column(inner.this)
                return None if col is None else f"{col[0]} is not null"
            return None
        if isinstance(node, exp.Like) and not node.args.get("escape"):
            col = self.column(node.this)
            lit = _literal(node.expression)
            if col is None or lit is None or lit[0] != "string":
                return None
            if not isinstance(col[1], StringType):
                return None
            prefix = lit[1][:-1] if lit[1].endswith("%") else None
            if prefix is None or "%" in prefix or "_" in prefix or "\\" in prefix:
                return None
            return f"{col[0]} like '{prefix.replace(chr(39), chr(39) * 2)}%'"
        return None


def _conjuncts(node: Node | None) -> list[Node]:
    if node is None:
        return []
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _parse(sql: str) -> Node:
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ValidationError(f"cannot parse the SQL query: {exc}") from exc
    if tree is None:
        raise ValidationError("the SQL query is empty")
    return tree


def _table_refs(tree: Node, catalog: Catalog) -> tuple[list[_Ref], dict[str, Table]]:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    refs: list[_Ref] = []
    tables: dict[str, Table] = {}
    for node in tree.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier):
            continue  # a table function such as read_parquet(...)
        if node.args.get("catalog"):
            raise ValidationError(
                f"{node.sql()}: neve sql reads tables named namespace.table (one namespace level)"
            )
        if not node.db:
            if node.name.lower() in ctes:
                continue
            raise ValidationError(
                f"table {node.name!r} needs its namespace: write namespace.table, e.g. "
                f"tpch.{node.name}"
            )
        name = f"{node.db}.{node.name}"
        if name not in tables:
            tables[name] = catalog.load_table(name)
        refs.append(_Ref(node, name))
    return refs, tables


def _pushdown(ref: _Ref, table: Table) -> None:
    """Fill ``ref.conjuncts`` with the pushable parts of its SELECT's WHERE."""
    parent = ref.node.parent
    select = parent.parent if isinstance(parent, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select):
        return
    alias = ref.node.args.get("alias")
    if alias is not None and alias.columns:
        return  # `ns.t AS x(a, b)` renames the columns: names no longer mean the table's
    joins = select.args.get("joins") or []
    if any(j.side or j.kind in ("FULL", "OUTER", "ANTI", "SEMI", "ASOF") for j in joins):
        return  # outer joins: a filter on the null-supplying side is not a row filter
    sources = 1 + len(joins)
    qualifiers = {ref.node.alias_or_name.lower()}
    if not ref.node.alias:
        qualifiers.add(ref.node.name.lower())
    translate = _Translator(table.schema(), qualifiers, unqualified=sources == 1)
    where = select.args.get("where")
    for conjunct in _conjuncts(where.this if where is not None else None):
        text = translate(conjunct)
        if text is not None:
            ref.conjuncts.append(text)


def _columns(tree: Node, table: Table, refs: list[_Ref]) -> list[str] | None:
    """The table's columns the query names, or None for all (``*``, or a name that
    could be a whole row)."""
    if any(not isinstance(star.parent, exp.Count) for star in tree.find_all(exp.Star)):
        return None  # count(*) reads no column; any other * reads them all
    aliases = {r.node.alias.lower() for r in refs if r.node.alias}
    names: set[str] = set()
    for col in tree.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            return None
        names.add(col.name.lower())
        if col.table:
            names.add(col.table.lower())
    if names & aliases:
        return None  # `SELECT t FROM ns.tbl t` reads the row as a struct
    if any(r.node.args.get("alias") is not None and r.node.args["alias"].columns for r in refs):
        return None  # columns renamed by the alias
    for fn in tree.find_all(exp.Anonymous):
        if str(fn.this).lower() == "columns":
            return None
    fields = table.schema().fields
    picked = [f.name for f in fields if f.name.lower() in names]
    return picked or [fields[0].name]


def plan_query(sql: str, catalog: Catalog) -> tuple[QueryPlan, dict[str, Table]]:
    """What neve reads for ``sql``: per table, the pushed filter and the columns."""
    tree = _parse(sql)
    refs, tables = _table_refs(tree, catalog)
    for ref in refs:
        _pushdown(ref, tables[ref.name])
    plan = QueryPlan(sql)
    for name, table in tables.items():
        mine = [r for r in refs if r.name == name]
        if any(not r.conjuncts for r in mine):
            pushed = None
        else:
            parts = [" and ".join(r.conjuncts) for r in mine]
            unique = list(dict.fromkeys(parts))
            pushed = unique[0] if len(unique) == 1 else " or ".join(f"({p})" for p in unique)
        plan.reads.append(PlannedRead(name, pushed, _columns(tree, table, mine)))
    return plan, tables


def _scan(table: Table, read: PlannedRead) -> Any:
    try:
        return table.scan(filter=read.filter, columns=read.columns, case_sensitive=False)
    except ExpressionError:
        # a literal neve reads differently after all: read without the filter
        read.filter = None
        return table.scan(columns=read.columns, case_sensitive=False)


def explain(sql: str, catalog: Catalog) -> QueryPlan:
    """The plan with file counts, reading no data."""
    plan, tables = plan_query(sql, catalog)
    for read in plan.reads:
        table = tables[read.table]
        scan = _scan(table, read)
        read.planned_files = len({t.file.file_path for t in scan.plan_files()})
        snap = table.current_snapshot()
        read.total_files = int(snap.summary.get("total-data-files", 0)) if snap else 0
    return plan


def run_query(sql: str, catalog: Catalog) -> tuple[pa.Table, QueryPlan]:
    """Run ``sql`` in DuckDB over the neve tables it names; returns the rows and what
    neve read."""
    # heavy: DuckDB loads a large native library; only this verb needs it
    import duckdb

    plan, tables = plan_query(sql, catalog)
    con = duckdb.connect()
    try:
        for i, read in enumerate(plan.reads):
            table = tables[read.table]
            scan = _scan(table, read)
            tasks = scan.plan_files()
            read.planned_files = len({t.file.file_path for t in tasks})
            snap = table.current_snapshot()
            read.total_files = int(snap.summary.get("total-data-files", 0)) if snap else 0
            data = scan.to_arrow()
            source = f"__neve_read_{i}"
            con.register(source, data)
            namespace, name = read.table.split(".")
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{namespace}"')
            con.execute(f'CREATE VIEW "{namespace}"."{name}" AS SELECT * FROM "{source}"')
        try:
            relation = con.sql(sql)
        except duckdb.Error as exc:
            raise ValidationError(f"the SQL query failed in DuckDB: {exc}") from exc
        if relation is None:  # a statement without rows
            return pa.table({}), plan
        # DuckDB 1.4 named it to_arrow_table; older releases arrow()
        fetch = getattr(relation, "to_arrow_table", None) or getattr(relation, "arrow")  # noqa: B009
        try:
            return fetch(), plan
        except duckdb.Error as exc:
            raise ValidationError(f"the SQL query failed in DuckDB: {exc}") from exc
    finally:
        con.close()
