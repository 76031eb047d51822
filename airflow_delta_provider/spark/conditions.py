"""Checking user SQL (conditions, SET expressions, invariants) before any write.

UPDATE and DELETE take SQL text from the command line. A typo must fail
before a single file is written, with a message that names the problem, so
every expression is parsed by Spark and analysed against an empty DataFrame
with the table's schema. Analysis resolves columns and types without running
a job. Spark errors become :class:`InvalidInputError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, StructType

from airflow_delta_provider.delta.errors import InvalidInputError

INVARIANTS_KEY = "delta.invariants"


def spark_schema(schema: Mapping[str, Any]) -> StructType:
    """The Spark schema of a Delta schema dict (Delta's JSON is Spark's)."""
    return StructType.fromJson(dict(schema))


def empty_frame(spark: SparkSession, schema: Mapping[str, Any]) -> DataFrame:
    """A DataFrame with the table's columns and no rows, for analysis only."""
    return spark.createDataFrame([], spark_schema(schema))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _analyse(what: str, sql: str, build) -> Any:
    """Run ``build`` (which parses and analyses) and translate Spark's errors."""
    try:
        return build()
    except PySparkException as exc:
        raise InvalidInputError(f"invalid {what} {sql!r}: {_first_line(exc)}") from exc


def parse_condition(spark: SparkSession, schema: Mapping[str, Any], condition: str | None) -> Column | None:
    """The condition as a Column, checked to resolve and to be boolean.

    ``None`` (no condition: every row) stays ``None``. An empty string is an
    error rather than silently "every row".
    """
    if condition is None:
        return None
    if not condition.strip():
        raise InvalidInputError("condition is empty; omit it to match every row")
    frame = empty_frame(spark, schema)

    def build() -> Column:
        col = F.expr(condition)
        dtype = frame.select(col.alias("c")).schema["c"].dataType
        if not isinstance(dtype, BooleanType):
            raise InvalidInputError(
                f"invalid condition {condition!r}: it is of type {dtype.simpleString()}, not boolean"
            )
        frame.filter(col).schema  # WHERE-only rules (no aggregates, no generators)
        return col

    return _analyse("condition", condition, build)


def resolve_column(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The top-level field named ``name`` (case-insensitive, as Spark resolves)."""
    matches = [f for f in schema.get("fields", []) if f["name"].lower() == name.strip().lower()]
    if not matches:
        known = ", ".join(f["name"] for f in schema.get("fields", []))
        raise InvalidInputError(f"cannot SET unknown column {name!r}; the table has: {known}")
    return matches[0]


def parse_assignments(
    spark: SparkSession, schema: Mapping[str, Any], set_exprs: Mapping[str, str]
) -> dict[str, Column]:
    """``{column: SQL}`` as ``{table column name: Column cast to its type}``.

    Targets must be existing top-level columns, each named once; every
    expression must resolve against the table and cast to the column's type.
    """
    if not set_exprs:
        raise InvalidInputError("UPDATE needs at least one SET column=expression")
    frame = empty_frame(spark, schema)
    out: dict[str, Column] = {}
    for target, sql in set_exprs.items():
        field = resolve_column(schema, target)
        name = field["name"]
        if name in out:
            raise InvalidInputError(f"column {name!r} is SET more than once")
        if sql is None or not str(sql).strip():
            raise InvalidInputError(f"SET {target}= has an empty expression")
        dtype = DataType.fromJson(field["type"]) if isinstance(field["type"], dict) else _atomic(field["type"])

        def build(sql: str = sql, dtype: DataType = dtype) -> Column:
            col = F.expr(sql).cast(dtype)
            frame.select(col.alias("v")).schema
            return col

        out[name] = _analyse(f"SET expression for {name}", sql, build)
    return out


def _atomic(type_name: str) -> DataType:
    # DataType.fromJson takes the bare JSON value of a primitive type name.
    return spark_schema(
        {"type": "struct", "fields": [{"name": "x", "type": type_name, "nullable": True, "metadata": {}}]}
    ).fields[0].dataType


# --- invariants -----------------------------------------------------------------


@dataclass(frozen=True)
class Invariant:
    """A rule every written row must satisfy: NOT NULL or a delta.invariants expression."""

    description: str
    check: Column  # true for a good row; false or null for a bad one


def invariants(schema: Mapping[str, Any]) -> list[Invariant]:
    """The table's row rules (writer version 2): ``nullable: false`` top-level
    columns, and every column's ``delta.invariants`` SQL expression."""
    rules: list[Invariant] = []
    for field in schema.get("fields", []):
        name = field["name"]
        if field.get("nullable") is False:
            rules.append(Invariant(f"NOT NULL column {name}", F.col(f"`{name}`").isNotNull()))
        rules.extend(_field_invariants(field, name))
    return rules


def _field_invariants(field: Mapping[str, Any], path: str) -> list[Invariant]:
    out: list[Invariant] = []
    raw = (field.get("metadata") or {}).get(INVARIANTS_KEY)
    if raw:
        spec = json.loads(raw) if isinstance(raw, str) else raw
        sql = ((spec or {}).get("expression") or {}).get("expression")
        if sql:
            out.append(Invariant(f"invariant {sql!r} on column {path}", F.expr(sql)))
    ftype = field.get("type")
    if isinstance(ftype, dict) and ftype.get("type") == "struct":
        for sub in ftype.get("fields", []):
            out.extend(_field_invariants(sub, f"{path}.{sub['name']}"))
    return out


def enforce_invariants(df: DataFrame, rules: list[Invariant]) -> DataFrame:
    """``df`` with a runtime check: writing a row that breaks a rule fails the
    job with the rule's description (Spark ``raise_error``), in the same pass
    as the write. Without rules, ``df`` is returned as is."""
    if not rules:
        return df
    ok = F.lit(True)
    for rule in rules:
        ok = F.when(F.coalesce(rule.check, F.lit(False)), ok).otherwise(
            F.raise_error(F.lit(f"{VIOLATION_MARK}{rule.description}"))
        )
    return df.filter(ok)


#: Prefix of the runtime error raised by :func:`enforce_invariants`, so the
#: command can tell an invariant failure from any other job failure.
VIOLATION_MARK = "DELTA_INVARIANT_VIOLATION: "


def violation_from(exc: BaseException) -> str | None:
    """The broken rule's description when ``exc`` came from enforce_invariants."""
    text = str(exc)
    at = text.find(VIOLATION_MARK)
    if at < 0:
        return None
    rest = text[at + len(VIOLATION_MARK) :]
    return rest.split("\n", 1)[0].split(" SQLSTATE")[0].rstrip(". ")


__all__ = [
    "Invariant",
    "enforce_invariants",
    "empty_frame",
    "invariants",
    "parse_assignments",
    "parse_condition",
    "resolve_column",
    "spark_schema",
    "violation_from",
]
