"""Which commits wake a watcher: data changes, operations, partitions.

Sensors and triggers fire on new table versions, but many commits change no
row: OPTIMIZE, REORG ... PURGE and row-tracking backfills rewrite files with
``dataChange: false``; VACUUM's START and END commits, checkpoints' protocol
upgrades and schema or property changes add and remove no file at all. A
:class:`CommitFilter` decides from one commit's :class:`CommitSummary` alone:

- ``data_changes_only``: the commit adds or removes a file with
  ``dataChange: true``, or writes change data (``cdc``) files. delta-spark's
  streaming source reads the same files: PROTOCOL.md "dataChange" says a
  ``false`` flag marks a rearrangement that readers of changes may skip.
- ``operations``: ``commitInfo.operation`` is one of these.
- ``partition``: one of those files lies in a matching partition, judged
  from its ``partitionValues`` by the evaluator that prunes files for scans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.coerce import INTEGRAL
from airflow_delta_provider.delta.expressions.parse import Predicate, sql_literal
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.log.commit_summary import CommitSummary, FileChange
from airflow_delta_provider.delta.scan.skipping import partition_matcher
from airflow_delta_provider.delta.table_features.column_mapping import mode_of

#: What a partition filter may be: partition values by column, or a SQL predicate.
PartitionSpec = Mapping[str, Any] | str


def partition_predicate(partition: PartitionSpec, column_types: Mapping[str, str] | None = None) -> Predicate:
    """``partition`` as a predicate: ``{"ds": "2024-01-01"}`` becomes
    ```ds` = '2024-01-01'``, a None value ``IS NULL``. Values are compared
    as Spark compares a literal with the column (``'2024-01-01'`` matches a
    DATE partition). A mapping holds partition values, so with the table's
    ``column_types`` (lower-case name to Delta type) a numeric column's value
    may also be given as text, ``"7"``, as a template renders it."""
    if isinstance(partition, str):
        if not partition.strip():
            raise InvalidInputError("partition must be a mapping of partition values or a non-empty SQL predicate")
        return Predicate.parse(partition)
    if not isinstance(partition, Mapping) or not partition:
        raise InvalidInputError(
            f"partition must be a mapping of partition values or a SQL predicate, got {partition!r}"
        )
    types = {k.lower(): v for k, v in (column_types or {}).items()}
    terms = []
    for column, value in partition.items():
        if not isinstance(column, str) or not column:
            raise InvalidInputError(f"partition column names must be non-empty strings, got {column!r}")
        if value is None:
            terms.append(f"{quote_identifier(column)} IS NULL")
        else:
            terms.append(f"{quote_identifier(column)} = {_literal(column, value, types.get(column.lower()))}")
    return Predicate.parse(" AND ".join(terms))


def _literal(column: str, value: Any, column_type: str | None) -> str:
    """The SQL literal of one partition value."""
    if isinstance(value, str) and column_type is not None and _is_numeric(column_type):
        try:
            Decimal(value.strip())
        except InvalidOperation:
            raise InvalidInputError(
                f"partition value {value!r} of {column} is not a number ({column} is {column_type})"
            ) from None
        return value.strip()
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return sql_literal(value) or sql_literal(text) or ""


def _is_numeric(column_type: str) -> bool:
    return column_type in (*INTEGRAL, "float", "double") or column_type.startswith("decimal")


@dataclass(frozen=True)
class PartitionScheme:
    """A table's partitioning, as a partition filter needs it."""

    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    mapping_mode: str

    @classmethod
    def of(cls, metadata: Metadata) -> PartitionScheme:
        return cls(metadata.schema_json, tuple(metadata.partition_columns), mode_of(metadata.configuration))

    @property
    def column_types(self) -> dict[str, str]:
        """Top-level column name (lower case) to its Delta type (lower case; "" for a nested type)."""
        return {
            f["name"].lower(): f["type"].lower() if isinstance(f["type"], str) else ""
            for f in self.schema.get("fields", ())
        }

    def matcher(self, partition: PartitionSpec, table: str = "the table") -> Callable[[AddFile], bool]:
        """Whether a file's partition matches ``partition``. Refuses, naming the
        columns, a filter over columns that are not partition columns."""
        predicate = partition_predicate(partition, self.column_types)
        if not self.partition_columns:
            raise InvalidInputError(f"{table} is not partitioned: a partition filter ({predicate.sql!r}) cannot match")
        if not predicate.is_partition_only(self.partition_columns):
            parts = {c.lower() for c in self.partition_columns}
            others = sorted(c for c in predicate.columns if c.lower() not in parts)
            raise InvalidInputError(
                f"partition filter {predicate.sql!r} reads {', '.join(others)}, which "
                f"{'is not a partition column' if len(others) == 1 else 'are not partition columns'} "
                f"of {table} (partitioned by {', '.join(self.partition_columns)})"
            )
        return partition_matcher(predicate, self.schema, self.partition_columns, mapping_mode=self.mapping_mode)


@dataclass(frozen=True)
class CommitFilter:
    """Which commits pass; the default passes commits that change data."""

    data_changes_only: bool = True
    operations: frozenset[str] | None = None
    partition: PartitionSpec | None = None  # checked when built; typed by the table in PartitionScheme.matcher

    @classmethod
    def build(
        cls,
        *,
        data_changes_only: bool = True,
        operations: Sequence[str] | None = None,
        partition: PartitionSpec | None = None,
    ) -> CommitFilter:
        """A filter from a sensor's or trigger's arguments, checked."""
        if operations is not None:
            if isinstance(operations, str) or not all(isinstance(o, str) and o for o in operations):
                raise InvalidInputError(
                    f"operations must be a list of operation names such as ['WRITE', 'MERGE'], got {operations!r}"
                )
            if not operations:
                raise InvalidInputError("operations is empty: no commit could pass; pass None for every operation")
        if partition is not None:
            partition_predicate(partition)  # a predicate that does not parse fails here
        return cls(
            data_changes_only=bool(data_changes_only),
            operations=frozenset(o.upper() for o in operations) if operations is not None else None,
            partition=partition,
        )

    @property
    def passes_everything(self) -> bool:
        return not self.data_changes_only and self.operations is None and self.partition is None

    def accepts(self, commit: CommitSummary, in_partition: Callable[[AddFile], bool] | None = None) -> bool:
        """Whether ``commit`` passes. ``in_partition`` (from
        :meth:`PartitionScheme.matcher`) is required with a partition filter."""
        if self.operations is not None and (commit.info.operation or "").upper() not in self.operations:
            return False
        files: Iterable[FileChange] = commit.files
        if self.data_changes_only:
            files = [f for f in files if f.data_change or f.kind == "cdc"]
            if not files:
                return False
        if self.partition is None:
            return True
        if in_partition is None:
            raise ValueError("a partition filter needs the table's partition matcher")
        # A tombstone without partition values may be in the partition: fire rather than miss.
        return any(not f.partition_known or in_partition(f.file) for f in files)


__all__ = ["CommitFilter", "PartitionScheme", "PartitionSpec", "partition_predicate"]
