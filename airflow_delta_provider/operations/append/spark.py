"""APPEND: add a source's rows to a table, creating or overwriting it as asked.

One Spark job writes the files, one core transaction commits them
(operation ``WRITE``, as delta-spark's ``df.write.format("delta")``):

- absent table: created at protocol 1/2 with the data's schema (made
  nullable, as delta-spark stores DataFrame schemas) and ``partition_by``;
- ``mode="append"``: a blind append (it reads nothing, so it never conflicts
  with other appends); the data must fit the table schema, or with
  ``merge_schema`` the schema evolves (new columns; with
  ``delta.enableTypeWidening``, wider column types too);
- ``mode="overwrite"``: every live file is removed in the same commit (a
  whole-table read for conflict checks); with ``overwrite_schema`` the schema
  and partitioning are replaced too, keeping the table id;
- ``txn_app_id``/``txn_version``: an append whose version is already
  recorded for that application is a no-op; its result's version is the one
  the earlier write of that ``txn`` committed (None when that commit is gone).

All checks on schemas and options happen before any data is written; data
checks (NOT NULL, ``delta.invariants``) run inside the write job. A failure
after files were written deletes them when the commit surely did not land
(see :class:`~airflow_delta_provider.spark.write.files.WrittenFiles`), so the table
is left as it was; files a landed commit references are never deleted.

Data files are written in the I/O mode ``io`` asks for
(:mod:`~airflow_delta_provider.spark.runtime.io_mode`). A source on an object store
is read by Spark in ``hadoop`` mode; in ``arrow`` mode a parquet folder or
file, or a Delta table, is read with pyarrow (other formats need ``hadoop``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession

# Aliased: the spec's ``table_properties`` would read as the module.
from airflow_delta_provider.delta import table_properties as table_props
from airflow_delta_provider.delta.actions.model import AddFile, DomainMetadata, Metadata
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    IdentityHighWaterMarkConflictError,
    InvalidInputError,
    MetadataChangedError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.schema.arrow import to_arrow_schema
from airflow_delta_provider.delta.schema.evolution import enforce_schema, merge_schemas
from airflow_delta_provider.delta.schema.names import check_column_names, check_unique_names
from airflow_delta_provider.delta.schema.types import VARIANT, as_nullable, schema_string, type_name
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering, column_mapping, type_widening
from airflow_delta_provider.delta.table_features import identity_columns as identity_module
from airflow_delta_provider.delta.table_features.generated_columns import generation_expressions
from airflow_delta_provider.delta.table_features.identity_columns import Identity, identity_columns
from airflow_delta_provider.operations.append.location import check_new_table_location
from airflow_delta_provider.operations.append.metrics import AppendMetrics
from airflow_delta_provider.operations.append.plan import check_partition_by
from airflow_delta_provider.operations.append.replacement import Replacement
from airflow_delta_provider.operations.append.spec import DYNAMIC_OVERWRITE, AppendSpec, parse_table_schema
from airflow_delta_provider.operations.optimize.auto_compact import after_write
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.sources.spark import Source
from airflow_delta_provider.spark.runtime.io_mode import resolve_io
from airflow_delta_provider.spark.write.files import WrittenFiles, conform, write_files
from airflow_delta_provider.spark.write.generated_columns import fill_generated, with_identity_values, written_extreme

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.transaction.transaction import Transaction

OPERATION = "WRITE"
#: How many times an append that generated identity values runs when a
#: concurrent commit moved the high-water mark under it.
IDENTITY_ATTEMPTS = 3


def run(spark: SparkSession, spec: AppendSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """Append (or overwrite with) the rows at ``spec.source`` (read as
    ``source_format``, with reader ``options``), or those of the query
    ``source_sql`` over ``source_views``, to ``spec.table_path``.

    ``io``: ``auto``, ``hadoop`` or ``arrow`` (:mod:`~airflow_delta_provider.spark.runtime.io_mode`).
    ``table_properties`` (``delta.*``) are set on the table in the same
    commit; one that needs a table feature (``delta.enableDeletionVectors``)
    upgrades the protocol, as delta-spark does. ``storage_options`` reach
    the table (and a Delta source) from this process (default: the environment).

    Generated columns the source lacks are computed, and those it gives are
    checked. Identity columns the source lacks get values beyond the
    high-water mark, and the commit records the new mark; should a
    concurrent commit move the mark first (a metadata conflict, as in
    delta-spark), the append runs again from the new snapshot, new values
    and all, up to :data:`IDENTITY_ATTEMPTS` times.

    ``table_schema`` (a Delta schema's JSON) is the schema of a table this
    creates (or, with ``overwrite_schema``, replaces) instead of the
    source's: its field metadata may declare generated columns
    (``delta.generationExpression``) and identity columns
    (``delta.identity.start``/``step``/``allowExplicitInsert``), which then
    upgrade the protocol as delta-spark does. The source must fit it.

    With ``mode="overwrite"``, ``replace_where`` (a SQL predicate) replaces
    only the rows it matches, and ``partition_overwrite_mode="dynamic"`` only
    the partitions the source writes, in the same one commit
    (:mod:`~airflow_delta_provider.operations.append.replacement`).

    ``cluster_by`` makes a table this creates (or replaces with
    ``overwrite_schema``) a liquid-clustered one (:mod:`~airflow_delta_provider.delta.table_features.clustering`):
    never with ``partition_by``, as delta-spark refuses. On an existing table
    it must name the table's clustering columns (ALTER changes them); a
    schema it replaces without ``cluster_by`` keeps them, and must still fit.

    The arguments were checked by ``spec.validate()``; what needs the table is checked here.
    """
    declared = _parse_table_schema(spec.table_schema)
    with Source.of(spark, spec, storage_options) as rows:
        for attempt in range(1, IDENTITY_ATTEMPTS + 1):
            try:
                return _append_once(spark, spec, rows, declared, storage_options)
            except IdentityHighWaterMarkConflictError:
                if attempt == IDENTITY_ATTEMPTS:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover


def write_parameters(spec: AppendSpec) -> dict[str, Any]:
    """delta-spark's WRITE ``operationParameters``: the mode, the partitioning the writer asked for (not
    the table's: an append to a partitioned table without one records ``[]``), the ``predicate`` of a
    ``replace_where`` (as written) or ``isDynamicPartitionOverwrite``, the schema options that were
    on (``canMergeSchema``, and ``canOverwriteSchema`` for an overwrite), as JSON booleans, and ``clusterBy``."""
    parameters: dict[str, Any] = {"mode": spec.mode.capitalize(), "partitionBy": json.dumps(list(spec.partition_by))}
    if spec.replace_where is not None:
        parameters["predicate"] = spec.replace_where
    if _dynamic(spec):
        parameters["isDynamicPartitionOverwrite"] = True
    if spec.overwrite_schema and spec.mode == "overwrite":
        parameters["canOverwriteSchema"] = True
    if spec.merge_schema:
        parameters["canMergeSchema"] = True
    if spec.cluster_by:
        parameters["clusterBy"] = json.dumps(list(spec.cluster_by))
    return parameters


def _dynamic(spec: AppendSpec) -> bool:
    """Whether ``spec`` is a dynamic partition overwrite."""
    return spec.partition_overwrite_mode == DYNAMIC_OVERWRITE


def _append_once(
    spark: SparkSession,
    spec: AppendSpec,
    source: Source,
    table_schema: dict[str, Any] | None,
    storage_options: Mapping[str, str] | None,
) -> CommandResult:
    table, mode, partition_by = spec.table_path, spec.mode, list(spec.partition_by)
    properties = dict(spec.table_properties)
    target = DeltaTable(table, storage_options)
    table_io = resolve_io(spark, target.storage.location, spec.io)
    snapshot = target.snapshot() if target.exists() else None
    if snapshot is None and mode != "overwrite":
        check_new_table_location(target.storage, partition_by)

    if snapshot is not None and spec.txn_app_id is not None and spec.txn_version is not None:
        recorded = snapshot.txn_version(spec.txn_app_id)
        if recorded is not None and recorded >= spec.txn_version:  # skipped, as delta-spark skips it
            earlier = target.find_txn_commit(spec.txn_app_id, spec.txn_version, snapshot)
            return CommandResult(table, OPERATION, earlier[0] if earlier else None, AppendMetrics.written([]))

    data = source.frame()
    data_schema = column_mapping.strip(data.schema.jsonValue())  # a mapped source's ids mean nothing here
    data_schema = type_widening.strip(data_schema)  # nor does a widened source's type history
    previous = snapshot.metadata if snapshot is not None else None
    widen = previous is not None and table_props.type_widening_enabled(
        table_props.with_properties(previous, properties)
    )
    metadata, schema, partition_columns = _plan_metadata(snapshot, data_schema, spec, widen, table_schema)
    metadata = column_mapping.apply(table_props.with_properties(metadata, properties), previous)
    if column_mapping.mode_of(metadata.configuration) == column_mapping.NONE:
        check_column_names(data_schema)  # mapping lets names hold any character
        if table_schema is not None:
            check_column_names(table_schema)
    schema = metadata.schema_json
    domain = _clustering_domain(snapshot, metadata, list(spec.cluster_by), spec.overwrite_schema)
    data, identities = _complete_rows(data, schema, data_schema)

    txn = target.transaction(OPERATION, parameters=write_parameters(spec), snapshot=snapshot)
    if domain is not None:
        txn.set_domain(domain)
    replacement = None
    if snapshot is not None and mode == "overwrite":
        replacement = Replacement(
            spark, target, snapshot, txn, io=table_io, storage_options=storage_options,
            replace_where=spec.replace_where, dynamic=_dynamic(spec),
        )  # fmt: skip
        replacement.prepare()
    adds = write_files(
        data, target, schema, partition_columns, configuration=dict(metadata.configuration), io=table_io,
        row_checks=replacement.row_checks if replacement is not None else None, optimized=True,
    )  # fmt: skip
    rewritten = replacement.written if replacement is not None else []
    others = replacement.other_files if replacement is not None else []
    with WrittenFiles(target, adds) as written, WrittenFiles(target, rewritten, others) as rewrites:
        if identities:
            metadata = _record_high_water_marks(txn, target, adds, metadata, snapshot, identities)
        metrics = AppendMetrics.written(adds)
        if replacement is not None:
            replacement.check_written(adds)
            replacement.remove(adds, conform(data, schema))
            if _dynamic(spec) and not adds and replacement.dynamic:  # nothing written, no partition replaced
                return CommandResult(table, OPERATION, None, replacement.metrics(adds))
            txn.add_all(replacement.actions())
            metrics = replacement.metrics(adds)
        if metadata is not (snapshot.metadata if snapshot is not None else None):
            txn.update_metadata(metadata)
        txn.add_all(adds)
        if spec.txn_app_id is not None and spec.txn_version is not None:
            txn.set_txn(spec.txn_app_id, spec.txn_version)
        written.committing()
        rewrites.committing()
        try:
            result = txn.commit(metrics=metrics.commit_metrics(), token=spec.token, user_metadata=spec.user_metadata)
        except MetadataChangedError as exc:
            if not identities:
                raise
            raise IdentityHighWaterMarkConflictError(
                f"{exc}; this APPEND generated identity values from the high-water mark it read",
                exc.winning_version,
            ) from exc
    done = CommandResult(table, OPERATION, result.version, metrics)
    return after_write(spark, target, done, adds, metadata.configuration, table_io)


def _clustering_domain(
    snapshot: Snapshot | None, metadata: Metadata, cluster_by: list[str], overwrite_schema: bool
) -> DomainMetadata | None:
    """The ``delta.clustering`` domain a write with ``cluster_by`` sets: on a
    table it creates or replaces; on an existing one ``cluster_by`` must repeat
    the table's clustering columns (None: nothing to set)."""
    if not cluster_by:
        kept = clustering.clustering_columns(snapshot) if snapshot is not None and overwrite_schema else []
        if kept:  # a replaced schema keeps the clustering: it must still fit (no partitions, the columns kept)
            names = [".".join(c) for c in kept]
            clustering.check_columns(metadata.schema_json, metadata.partition_columns, metadata.configuration, names)
        return None
    if snapshot is not None and not overwrite_schema:
        current = [".".join(p) for p in clustering.clustering_columns(snapshot)]
        if [c.lower() for c in current] != [c.strip().strip("`").lower() for c in cluster_by]:
            raise InvalidInputError(
                f"table {snapshot.table_root} is clustered by {current or 'nothing'}, not {cluster_by}: change its "
                "clustering columns with ALTER TABLE ... CLUSTER BY"
            )
        return None
    columns = clustering.check_columns(
        metadata.schema_json, metadata.partition_columns, metadata.configuration, cluster_by
    )
    mapping = column_mapping.ColumnMapping.of(metadata.schema_json, metadata.configuration)
    return clustering.domain_action([mapping.physical_column(c) if mapping.enabled else c for c in columns])


def _complete_rows(
    data: DataFrame, schema: dict[str, Any], data_schema: dict[str, Any]
) -> tuple[DataFrame, list[Identity]]:
    """The source rows as the table's columns, with the generated columns it
    lacks computed and values for the identity columns it lacks; and those
    identity columns. A GENERATED ALWAYS identity column the source gives is
    refused (delta-spark's ``blockExplicitIdentityColumnInsert``)."""
    given = {f["name"].lower() for f in data_schema.get("fields", ())}
    expressions = generation_expressions(schema)
    identities = identity_columns(schema)
    for ident in identities:
        if ident.column.lower() in given:
            identity_module.check_explicit_insert(ident, "the APPEND source")
    missing = {name: None for name in expressions if name.lower() not in given}
    fresh = [i for i in identities if i.column.lower() not in given]
    if not missing and not fresh:
        return data, []
    rows = with_identity_values(conform(data, schema), fresh)  # generation may read identity values
    return fill_generated(rows, schema, missing), fresh


def _record_high_water_marks(
    txn: Transaction,
    target: DeltaTable,
    adds: list[AddFile],
    metadata: Metadata,
    snapshot: Snapshot | None,
    identities: list[Identity],
) -> Metadata:
    """``metadata`` with the identity columns' new high-water marks, from the
    values written to ``adds``; staged in ``txn``, tagged as delta-spark tags a
    metadata change that only moves the marks."""
    mapping = column_mapping.ColumnMapping.of(metadata.schema_json, metadata.configuration)
    partitions = {c.lower() for c in metadata.partition_columns}
    marks: dict[str, int] = {}
    for ident in identities:
        key = mapping.physical_column(ident.column) if mapping.enabled else ident.column
        extreme = written_extreme(target.storage, adds, key, ident.column.lower() in partitions, ident.step > 0)
        mark = ident.new_high_water_mark([] if extreme is None else [extreme])
        if mark is not None and mark != ident.high_water_mark:
            marks[ident.column] = mark
    if not marks:
        return metadata
    if metadata is (snapshot.metadata if snapshot is not None else None):
        txn.tag(identity_module.COMMIT_TAG, "true")
    schema = identity_module.with_high_water_marks(metadata.schema_json, marks)
    return replace(metadata, schema_string=schema_string(schema))


def _plan_metadata(
    snapshot: Snapshot | None,
    data_schema: dict[str, Any],
    spec: AppendSpec,
    widen: bool = False,
    table_schema: dict[str, Any] | None = None,
) -> tuple[Metadata, dict[str, Any], list[str]]:
    """The metadata the commit leaves in force, its schema and partition columns.
    ``widen``: merging may widen column types (``delta.enableTypeWidening``).
    ``table_schema``: the declared schema of a table created or replaced.

    Returns the snapshot's own Metadata object when nothing changes.
    """
    partition_by, mode, overwrite_schema = list(spec.partition_by), spec.mode, spec.overwrite_schema
    now = int(time.time() * 1000)
    if table_schema is not None and snapshot is not None and not overwrite_schema:
        raise InvalidInputError(
            "a table schema is only for a table this APPEND creates, or replaces with overwrite_schema; "
            f"table {snapshot.table_root} exists"
        )
    if snapshot is None or overwrite_schema:
        if table_schema is not None:
            enforce_schema(_derived_nullable(table_schema), data_schema, declared=True)
        schema = as_nullable(data_schema) if table_schema is None else table_schema
        partition_columns = _resolve_partition_columns(schema, partition_by)
        if snapshot is None:
            return (
                Metadata.new(schema_string(schema), partition_columns, {}, created_time=now),
                schema,
                partition_columns,
            )
        if table_props.append_only(snapshot.metadata):
            raise _append_only(snapshot)
        md = replace(snapshot.metadata, schema_string=schema_string(schema), partition_columns=tuple(partition_columns))
        return md, schema, partition_columns

    md = snapshot.metadata
    table_schema = snapshot.schema
    partition_columns = list(snapshot.partition_columns)
    if mode == "overwrite" and table_props.append_only(md):
        raise _append_only(snapshot)
    check_partition_by(partition_by, snapshot)
    if spec.merge_schema:
        merged = merge_schemas(
            table_schema,
            data_schema,
            type_widening=widen,
            can_overwrite=True,
            column_mapping=column_mapping.mode_of(md.configuration) != column_mapping.NONE,
        )
        type_widening.check_partition_changes(table_schema, merged, partition_columns)
        if merged != table_schema:
            return replace(md, schema_string=schema_string(merged)), merged, partition_columns
        return md, table_schema, partition_columns
    enforce_schema(_derived_nullable(table_schema), data_schema, type_widening=widen)
    return md, table_schema, partition_columns


def _derived_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its generated and identity columns nullable: a source
    may leave them out whatever their nullability, as the write derives them."""
    derived = {n.lower() for n in generation_expressions(schema)} | {i.column.lower() for i in identity_columns(schema)}
    if not derived:
        return schema
    fields = [{**f, "nullable": True} if f["name"].lower() in derived else f for f in schema.get("fields", ())]
    return {**schema, "fields": fields}


def _parse_table_schema(table_schema: str | None) -> dict[str, Any] | None:
    """A declared Delta schema (a struct's JSON, as the spec checked): its
    fields of known types, uniquely named, with readable identity metadata."""
    schema = parse_table_schema(table_schema)
    if schema is None:
        return None
    try:
        for f in schema["fields"]:
            f.setdefault("nullable", True)
            f.setdefault("metadata", {})
        to_arrow_schema(schema)  # every type is one Delta knows
    except (KeyError, TypeError, AttributeError, ValueError, InvalidInputError, UnsupportedFeatureError) as exc:
        raise InvalidInputError(f"invalid table schema: {exc}") from None
    check_unique_names(schema)
    identity_columns(schema)  # readable identity definitions (long columns, a step other than 0)
    return schema


def _resolve_partition_columns(schema: dict[str, Any], partition_by: list[str]) -> list[str]:
    """Partition columns spelled as in the schema; they must exist and be primitive."""
    by_name = {f["name"].lower(): f for f in schema.get("fields", ())}
    out = []
    for c in partition_by:
        field = by_name.get(c.lower())
        if field is None:
            raise SchemaMismatchError(
                f"partition column {c!r} is not in the data: {sorted(f['name'] for f in by_name.values())}"
            )
        if not isinstance(field["type"], str):
            raise InvalidInputError(f"partition column {c!r} has a complex type {field['type']['type']}")
        if type_name(field["type"]) == VARIANT:
            raise InvalidInputError(
                f"partition column {c!r} is a variant: variant values are not comparable and cannot partition a table"
            )
        out.append(field["name"])
    if len(set(c.lower() for c in out)) != len(out):
        raise InvalidInputError(f"partition columns repeat: {partition_by}")
    if out and len(out) == len(by_name):
        raise InvalidInputError("cannot partition by every column: data files would hold no column")
    return out


def _append_only(snapshot: Snapshot) -> AppendOnlyViolationError:
    return AppendOnlyViolationError(
        f"table {snapshot.table_root} is append-only (delta.appendOnly=true): overwrite would remove data"
    )


__all__ = ["OPERATION", "run", "write_parameters"]
