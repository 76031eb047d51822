"""Selective overwrites: what ``replace_where`` and dynamic partition overwrite replace.

An overwrite that replaces part of a table, in one commit, as delta-spark's
``replaceWhere`` and ``partitionOverwriteMode=dynamic`` do (``WriteIntoDelta``):

- ``replace_where``: the rows matching a predicate go (whole files where
  partition values or stats decide, the matching rows of the others), the
  source's rows come, and every source row must match the predicate.
  Any column may be named; a subquery or a call whose value changes between
  evaluations (``rand()``) may not: the rows removed and the rows checked
  would be different sets.
- dynamic partition overwrite: the partitions the source's rows fall in are
  replaced whole; on an unpartitioned table, the whole table.

Both need ``mode="overwrite"``, exclude each other, and exclude
``overwrite_schema`` (delta-spark refuses the last two pairs; it ignores a
predicate on an append, which we refuse rather than ignore).

And the partitioning an APPEND asks for: an existing table keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.parse import nondeterministic_calls, parse_condition
from airflow_delta_provider.delta.partitions import parse_partition_value
from airflow_delta_provider.delta.watch.commit_filter import partition_predicate

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot


def check_replace_predicate(sql: str) -> None:
    """Refuse a subquery and a non-deterministic call, naming them (the spec
    refuses an empty predicate). Spark then resolves its columns against the table."""
    parse_condition(sql)  # syntax, and no subquery
    calls = nondeterministic_calls(sql)
    if calls:
        raise InvalidInputError(
            f"replace_where {sql!r} calls {', '.join(calls)}, whose value changes between evaluations: "
            "the rows removed and the rows checked would differ; give a deterministic predicate"
        )


def check_partition_by(partition_by: Iterable[str], snapshot: Snapshot) -> None:
    """Refuse ``partition_by`` when it is not the existing table's partitioning
    (names compare case-insensitively; none given is the table's)."""
    given, have = list(partition_by), list(snapshot.partition_columns)
    if given and [c.lower() for c in given] != [c.lower() for c in have]:
        raise InvalidInputError(
            f"partition columns {given} do not match the table's {have}; "
            "use mode overwrite with overwrite_schema to change them"
        )


def replaced_partitions(snapshot: Snapshot, written: Iterable[AddFile]) -> list[AddFile]:
    """The live files of ``snapshot`` in the partitions ``written`` falls in
    (dynamic partition overwrite), partition values compared as typed values,
    so two spellings of one timestamp are one partition."""
    values_of, types = _partition_reader(snapshot)

    def key(f: AddFile) -> tuple[Any, ...]:
        return tuple(parse_partition_value(v, types[c.lower()]) for c, v in values_of(f).items())

    keys = {key(f) for f in written}
    return [f for f in snapshot.files if key(f) in keys]


def partitions_predicate(snapshot: Snapshot, files: Iterable[AddFile]) -> str | None:
    """A predicate over ``snapshot``'s partition columns matching exactly the
    partitions ``files`` lie in (what a dynamic overwrite read, for conflict
    checks); None for no file."""
    values_of, types = _partition_reader(snapshot)
    terms = sorted({partition_predicate(values_of(f), types).sql for f in files})
    return " OR ".join(f"({term})" for term in terms) if terms else None


def _partition_reader(
    snapshot: Snapshot,
) -> tuple[Callable[[AddFile], dict[str, str | None]], dict[str, Any]]:
    """A file's partition values by logical column name (the log keys them by
    physical name under column mapping), and the columns' types by lower-case name."""
    types = {f["name"].lower(): f["type"] for f in snapshot.schema.get("fields", ())}
    mapping = snapshot.column_mapping
    stored = {c: (mapping.physical_column(c) if mapping.enabled else c).lower() for c in snapshot.partition_columns}

    def values_of(f: AddFile) -> dict[str, str | None]:
        lowered = {k.lower(): v for k, v in f.partition_values.items()}
        return {column: lowered.get(key) for column, key in stored.items()}

    return values_of, types


__all__ = [
    "check_partition_by",
    "check_replace_predicate",
    "partitions_predicate",
    "replaced_partitions",
]
