"""Checking user SQL (conditions and SET expressions) before any write.

UPDATE and DELETE take SQL text from the command line. A typo must fail
before a single file is written, with a message that names the problem, so
every expression is parsed by Spark and analysed against an empty DataFrame
with the table's schema. Analysis resolves columns and types without running
a job. Spark errors become :class:`InvalidInputError`.

Which Spark errors are the user's: the user's SQL is analysed here, first,
in :func:`analyse`, and SQL that must run later (as part of a bigger plan)
runs inside :func:`user_input`, which marks the Spark errors leaving it.
An analysis error (SQLSTATE class 42) that carries no such mark comes from
SQL the provider built: :mod:`airflow_delta_provider.spark.cli` reports it
as :class:`~airflow_delta_provider.delta.errors.InternalError`, a bug of
ours, never as bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar, overload

from pyspark.errors import PySparkException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType

from airflow_delta_provider.delta.errors import InvalidInputError, first_line
from airflow_delta_provider.delta.expressions.resolve import set_targets
from airflow_delta_provider.spark.read.files import empty_frame, spark_schema

_T = TypeVar("_T")


def analyse(what: str, sql: str, build: Callable[[], _T]) -> _T:
    """Run ``build`` (which parses and analyses) and translate Spark's errors.

    A Spark Connect server lost during the analysis is not bad input: that
    error passes unchanged, for the caller to report the engine as
    unavailable (a retry may find it back). Any other error leaving it is
    marked as the user's input's (:func:`user_input`)."""
    try:
        with user_input(what, sql):
            return build()
    except PySparkException as exc:
        if _server_lost(exc):
            raise
        raise InvalidInputError(f"invalid {what} {sql!r}: {first_line(exc)}") from exc


#: The attribute :func:`user_input` sets on a Spark error: (what, the user's SQL).
_USER_INPUT = "_delta_user_input"
#: How many causes and contexts of an error are searched for the mark.
_MAX_LINKS = 8


@contextmanager
def user_input(what: str, sql: str) -> Iterator[None]:
    """Mark any error leaving the block as caused by the user's ``sql``
    (``what``: how to name it, e.g. ``"replace_where"``); the error itself is
    not changed. Use it where user SQL is analysed or run as part of a
    bigger plan, so that its errors stay the user's."""
    try:
        yield
    except Exception as exc:
        if user_input_of(exc) is None:
            try:
                setattr(exc, _USER_INPUT, (what, sql))
            except AttributeError:  # an exception type without a __dict__: wrap it in a marked one
                raise InvalidInputError(f"invalid {what} {sql!r}: {first_line(exc)}") from exc
        raise


def user_input_of(exc: BaseException) -> tuple[str, str] | None:
    """(what, sql) when ``exc``, or an error it was raised from or during,
    left a :func:`user_input` block; else None."""
    seen: BaseException | None = exc
    for _ in range(_MAX_LINKS):
        if seen is None:
            return None
        mark = getattr(seen, _USER_INPUT, None)
        if mark is not None:
            return (str(mark[0]), str(mark[1]))
        seen = seen.__cause__ or seen.__context__
    return None


def _server_lost(exc: BaseException) -> bool:
    try:
        from airflow_delta_provider.spark.runtime.remote_session import unreachable_reason

        return unreachable_reason(exc) is not None
    except ImportError:  # no gRPC: a classic session, which has no server to lose
        return False


@overload
def parse_condition(spark: SparkSession, schema: Mapping[str, Any], condition: str) -> Column: ...
@overload
def parse_condition(spark: SparkSession, schema: Mapping[str, Any], condition: None) -> None: ...
@overload
def parse_condition(spark: SparkSession, schema: Mapping[str, Any], condition: str | None) -> Column | None: ...
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
        # Reading .schema makes Spark analyse the plan, which enforces the
        # WHERE-only rules (no aggregates, no generators); the value is not needed.
        _ = frame.filter(col).schema
        return col

    return analyse("condition", condition, build)


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
    for field, (target, sql) in zip(set_targets(schema, set_exprs), set_exprs.items()):
        name = field["name"]
        if sql is None or not str(sql).strip():
            raise InvalidInputError(f"SET {target}= has an empty expression")
        dtype = _spark_type(field["type"])

        def build(sql: str = sql, dtype: DataType = dtype) -> Column:
            col = F.expr(sql).cast(dtype)
            _ = frame.select(col.alias("v")).schema  # analyse the plan: resolves and checks the cast
            return col

        out[name] = analyse(f"SET expression for {name}", sql, build)
    return out


def _spark_type(delta_type: Any) -> DataType:
    """The Spark type of a Delta field type (a primitive name or a nested
    struct/array/map JSON object), read through a one-field struct."""
    return (
        spark_schema(
            {"type": "struct", "fields": [{"name": "x", "type": delta_type, "nullable": True, "metadata": {}}]}
        )
        .fields[0]
        .dataType
    )


__all__ = [
    "analyse",
    "empty_frame",
    "parse_assignments",
    "parse_condition",
    "user_input",
    "user_input_of",
]
