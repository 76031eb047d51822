"""The MERGE's plan: everything decided before a file is written.

:func:`plan_merge` (the arguments checked by the spec) opens the snapshot and a
transaction (the writer-feature gate), checks the source's schema against
the table's (``*`` clauses need a source that fits, or ``merge_schema``),
analyses every expression, persists a file source so every step reads the
same rows, and prunes the candidate files (:mod:`.prune`), recording what
was read for conflict checks. The :class:`MergePlan` it returns is frozen;
the steps after it (:mod:`.touched`, :mod:`.rewrite`, :mod:`.commit`) take it
and return values.

A MERGE reads at the table's ``delta.isolationLevel``, ``Serializable``
unless it says otherwise, as in delta-spark.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    InvalidInputError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.scan.merge_condition import (
    JoinFacts,
    join_facts,
    nondeterministic_calls,
)
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping, type_widening
from airflow_delta_provider.delta.table_features.change_data_feed import check_deterministic_values
from airflow_delta_provider.delta.transaction.transaction import Transaction
from airflow_delta_provider.operations.merge.clauses import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    MergeClause,
    operation_parameters,
    parse_clauses,
)
from airflow_delta_provider.operations.merge.files import Target
from airflow_delta_provider.operations.merge.prune import Candidates, prune
from airflow_delta_provider.operations.merge.rows import MergeRows
from airflow_delta_provider.operations.merge.schema import merge_schema_of
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.sources.spark import Source
from airflow_delta_provider.spark.read.files import spark_schema
from airflow_delta_provider.spark.runtime.io_mode import resolve_io

#: The operation a MERGE commits as.
OPERATION = "MERGE"


@dataclass(frozen=True)
class MergePlan:
    """One MERGE, decided: what it reads, what it may change, and what it writes."""

    #: The table as the caller named it (errors and the result say it so).
    table_uri: str
    #: The idempotency token the commit carries.
    token: str | None
    #: The table at the snapshot the MERGE reads, the resolved I/O mode, row tracking.
    target: Target
    #: The transaction the MERGE commits through; its read set is recorded.
    txn: Transaction
    on: str
    clauses: tuple[MergeClause, ...]
    target_alias: str
    source_alias: str
    #: The join condition's equi-join keys, target-only conjuncts and target columns.
    facts: JoinFacts
    #: The source's rows: persisted for a file source, a Delta source at its version as it is.
    source: DataFrame
    #: The source's Delta schema (column mapping and type widening metadata stripped).
    source_schema: dict[str, Any]
    #: The Delta schema the MERGE writes: the table's, or evolved by the source's.
    schema: dict[str, Any]
    #: The metadata recording the evolved schema; None when the schema stays.
    evolved: Metadata | None
    #: The join and the clause cascade, as Spark columns.
    rows: MergeRows
    #: The source's row count, the pruning predicate and the candidate files.
    candidates: Candidates
    #: Whether the commit records its changed rows (``delta.enableChangeDataFeed``).
    records_changes: bool
    #: When planning began (``time.monotonic()``): executionTimeMs counts from here.
    started: float
    #: Milliseconds spent keeping the source (delta-spark's materializeSourceTimeMs).
    materialize_ms: int = 0

    @property
    def snapshot(self) -> Snapshot:
        return self.target.snapshot

    @property
    def table_schema(self) -> dict[str, Any]:
        """The table's Delta schema before the MERGE."""
        return self.target.snapshot.schema

    @property
    def metadata(self) -> Metadata:
        """The metadata the commit leaves (before identity high-water marks)."""
        return self.evolved or self.target.snapshot.metadata

    def has(self, *, when: str | None = None, action: str | None = None) -> bool:
        """Whether some clause is of kind ``when`` and/or does ``action``."""
        return any((when is None or c.when == when) and (action is None or c.action == action) for c in self.clauses)

    @property
    def inserts(self) -> bool:
        return self.has(action=INSERT)

    @property
    def insert_only(self) -> bool:
        """Every clause is ``not_matched``: no target row is acted on."""
        return all(c.when == NOT_MATCHED for c in self.clauses)

    @property
    def only_deletes_match(self) -> bool:
        """Whether every matched clause deletes (or there is none): then a
        target row's several matches cannot disagree on its new values."""
        return all(c.action == DELETE for c in self.clauses if c.when == MATCHED)

    @property
    def insert_key_pairs(self) -> tuple[tuple[str, str], ...]:
        """The join's key pairs when inserts may anti-join the source to the
        matched keys (an equi-join that inserts); else none."""
        if not self.facts.equi_join or not self.inserts:
            return ()
        return self.facts.key_pairs


def plan_merge(
    spark: SparkSession,
    spec: MergeSpec,
    source: Source,
    *,
    keep: Callable[[DataFrame], DataFrame],
    storage_options: Mapping[str, str] | None = None,
) -> MergePlan:
    """Plan the MERGE ``spec`` asks for, of ``source`` into its table: every
    check that needs the table or Spark (``spec.validate()`` checked the
    arguments), the candidate files, and the transaction's read set. Writes
    nothing. ``keep`` persists a frame until the MERGE ends (a source that
    is not a Delta snapshot)."""
    from airflow_delta_provider.spark.read.row_tracking import materialized

    table, on, target_alias, source_alias = spec.table_path, spec.on, spec.target_alias, spec.source_alias
    delta_table = DeltaTable(table, storage_options)
    parsed = parse_clauses(spec.clauses)

    started = time.monotonic()
    resolved_io = resolve_io(spark, delta_table.storage.location, spec.io)
    snap = delta_table.snapshot()
    txn = delta_table.transaction(
        OPERATION,
        parameters=operation_parameters(on, parsed),
        snapshot=snap,
        isolation_level=table_properties.isolation_level(snap.metadata),
    )
    target = Target(spark, delta_table, snap, resolved_io, materialized(snap))
    if table_properties.append_only(snap.metadata) and any(c.action != INSERT for c in parsed):
        raise AppendOnlyViolationError(
            f"MERGE with update or delete clauses is not allowed: table {table} is append-only "
            "(delta.appendOnly=true); only not_matched insert clauses are"
        )
    records_changes = table_properties.change_data_feed_enabled(snap.metadata)
    if records_changes:
        check_deterministic_values(
            table, [sql for c in parsed if isinstance(c.assignments, Mapping) for sql in c.assignments.values()]
        )
    for sql in [on, *(c.condition for c in parsed if c.condition is not None)]:
        calls = nondeterministic_calls(sql)
        if calls:
            raise InvalidInputError(
                f"MERGE conditions must be deterministic (they are evaluated more than once), but {sql!r} "
                f"calls {', '.join(calls)}"
            )
    read = source.frame()
    source_schema = type_widening.strip(column_mapping.strip(read.schema.jsonValue()))
    written = merge_schema_of(snap, source_schema, parsed, spec.merge_schema)
    table_struct = spark_schema(snap.schema)
    facts = join_facts(on, target_alias, source_alias, table_struct.names, [f.name for f in read.schema.fields])
    rows = MergeRows(
        spark,
        parsed,
        on,
        written.schema,
        table_struct,
        read.schema,
        target_alias,
        source_alias,
        tracking=target.tracking.names if target.tracking is not None else (),
    )
    inserts = any(c.action == INSERT for c in parsed)
    rows.validate(inserts_beside_targets=inserts and not facts.equi_join)
    insert_only = all(c.when == NOT_MATCHED for c in parsed)  # its adds record its changes
    if records_changes and rows.generates_identity_values and not insert_only:
        raise UnsupportedFeatureError(
            f"MERGE cannot insert rows with generated identity values into {table} while "
            "delta.enableChangeDataFeed is on and it also updates or deletes: the change data would need "
            "the same values from a second pass. Give the identity column in the inserts (GENERATED BY "
            "DEFAULT), or insert with an insert-only MERGE or APPEND"
        )
    # Read once, whatever the source does meanwhile (delta-spark's
    # materializeSource); a Delta source at its version cannot change.
    kept_at = time.monotonic()
    kept = read if source.is_snapshot else keep(read)
    materialize_ms = int((time.monotonic() - kept_at) * 1000)
    candidates = prune(snap, kept, facts, parsed)
    # Conflict tracking (delta-spark filterFiles): the predicate read and the
    # files read. No predicate counts as a read of the whole table.
    if candidates.predicate is None:
        txn.read_whole_table()
    else:
        txn.read_predicate(candidates.predicate)
    txn.read_files(candidates.files)
    return MergePlan(
        table_uri=table,
        token=spec.token,
        target=target,
        txn=txn,
        on=on,
        clauses=parsed,
        target_alias=target_alias,
        source_alias=source_alias,
        facts=facts,
        source=kept,
        source_schema=source_schema,
        schema=written.schema,
        evolved=written.evolved,
        rows=rows,
        candidates=candidates,
        records_changes=records_changes,
        started=started,
        materialize_ms=materialize_ms,
    )


__all__ = ["OPERATION", "MergePlan", "plan_merge"]
