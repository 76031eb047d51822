"""The operations' runners, called the way the tests call them: the table, then keywords.

Each function builds its operation's spec (so the spec's ``validate()`` checks
the arguments, as for every caller) and runs it through the registry of
runners, the very path the Spark CLI takes. The keyword names are the ones
the tests were written with; the spec's own names are the operators' public ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.append.spec import AppendSpec
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.generate.spec import GENERATE_MODES, GenerateSpec
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.runners import run_spec
from airflow_delta_provider.operations.sources.spec import SourceView
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.operations.vacuum.spec import FULL_VACUUM, LITE_VACUUM, VacuumSpec


def _pairs(mapping: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in (mapping or {}).items())


def _json(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _views(views: str | Mapping[str, Any] | Sequence[SourceView] | None) -> str | None:
    if views is None or isinstance(views, (str, Mapping)):
        return _json(views)
    out: dict[str, Any] = {}
    for view in views:
        described: dict[str, Any] = {"path": view.path, "format": view.format}
        if view.version is not None:
            described["version"] = view.version
        if view.options:
            described["options"] = dict(view.options)
        out[view.name] = described
    return json.dumps(out)


def run_update(
    spark: Any,
    table: str,
    condition: str | None,
    set_exprs: Mapping[str, str],
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = UpdateSpec(table_path=table, condition=condition, updates=_pairs(set_exprs), token=token, io=io)
    return run_spec(spark, spec, storage_options)


def run_delete(
    spark: Any,
    table: str,
    condition: str | None,
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    return run_spec(spark, DeleteSpec(table_path=table, condition=condition, token=token, io=io), storage_options)


def run_append(
    spark: Any,
    table: str,
    source: str | None = None,
    format: str | None = "parquet",
    merge_schema: bool = False,
    partition_by: Sequence[str] | None = None,
    mode: str = "append",
    overwrite_schema: bool = False,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    options: Mapping[str, str] | None = None,
    token: str | None = None,
    io: str = "auto",
    table_properties: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    table_schema: Mapping[str, Any] | str | None = None,
    replace_where: str | None = None,
    partition_overwrite_mode: str | None = None,
    source_sql: str | None = None,
    source_views: str | Mapping[str, Any] | Sequence[SourceView] | None = None,
    cluster_by: Sequence[str] | None = None,
) -> CommandResult:
    spec = AppendSpec(
        table_path=table,
        source=source,
        source_format=format if source is not None else None,
        source_sql=source_sql,
        source_views=_views(source_views),
        mode=mode,
        table_schema=_json(table_schema),
        merge_schema=merge_schema,
        overwrite_schema=overwrite_schema,
        replace_where=replace_where,
        partition_overwrite_mode=partition_overwrite_mode,
        partition_by=tuple(partition_by or ()),
        cluster_by=tuple(cluster_by or ()),
        txn_app_id=txn_app_id,
        txn_version=txn_version,
        options=_pairs(options),
        table_properties=_pairs(table_properties),
        token=token,
        io=io,
    )
    return run_spec(spark, spec, storage_options)


def run_merge(
    spark: Any,
    table: str,
    source: str | None,
    on: str,
    clauses: str | Sequence[Mapping[str, Any]],
    *,
    source_format: str = "parquet",
    source_version: int | None = None,
    source_options: Mapping[str, str] | None = None,
    source_sql: str | None = None,
    source_views: str | Mapping[str, Any] | Sequence[SourceView] | None = None,
    target_alias: str = "t",
    source_alias: str = "s",
    merge_schema: bool = False,
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = MergeSpec(
        table_path=table,
        source=source,
        source_format=source_format,
        source_sql=source_sql,
        source_views=_views(source_views),
        on=on,
        clauses=_json(list(clauses) if not isinstance(clauses, str) else clauses) or "",
        target_alias=target_alias,
        source_alias=source_alias,
        source_version=source_version,
        merge_schema=merge_schema,
        options=_pairs(source_options),
        token=token,
        io=io,
    )
    return run_spec(spark, spec, storage_options)


def run_optimize(
    spark: Any,
    table: str,
    where: str | None = None,
    target_size: int | None = None,
    zorder_by: Sequence[str] = (),
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
    full: bool = False,
) -> CommandResult:
    spec = OptimizeSpec(
        table_path=table,
        where=where,
        target_size=target_size,
        zorder_by=tuple(zorder_by),
        full=full,
        token=token,
        io=io,
    )
    return run_spec(spark, spec, storage_options)


def run_vacuum(
    spark: Any,
    table: str,
    retention_hours: float | None = None,
    dry_run: bool = False,
    enforce_retention: bool = True,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    lite: bool = False,
) -> CommandResult:
    spec = VacuumSpec(
        table_path=table,
        retention_hours=retention_hours,
        dry_run=dry_run,
        retention_check=enforce_retention,
        mode=LITE_VACUUM if lite else FULL_VACUUM,
        token=token,
    )
    return run_spec(spark, spec, storage_options)


def run_changes(
    spark: Any,
    table: str,
    start: int,
    end: int | None,
    output: str,
    output_format: str = "parquet",
    *,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = ChangesSpec(
        table_path=table, start_version=start, end_version=end, output_path=output, output_format=output_format, io=io
    )
    return run_spec(spark, spec, storage_options)


def run_reorg_purge(
    spark: Any,
    table: str,
    min_deleted_ratio: float = 0.0,
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = ReorgSpec(table_path=table, min_deleted_ratio=min_deleted_ratio, token=token, io=io)
    return run_spec(spark, spec, storage_options)


def run_alter(
    spark: Any,
    table: str,
    change: str | Mapping[str, Any] | None = None,
    enable_column_mapping: bool = False,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    drop_feature: str | None = None,
    truncate_history: bool = False,
) -> CommandResult:
    spec = AlterSpec(
        table_path=table,
        change=_json(dict(change) if isinstance(change, Mapping) else change),
        drop_feature=drop_feature,
        truncate_history=truncate_history,
        enable_column_mapping=enable_column_mapping,
        token=token,
    )
    return run_spec(spark, spec, storage_options)


def run_checkpoint(
    spark: Any,
    table: str,
    cleanup_logs: bool = False,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    return run_spec(spark, CheckpointSpec(table_path=table, cleanup_logs=cleanup_logs, token=token), storage_options)


def run_restore(
    spark: Any,
    table: str,
    version: int | None = None,
    timestamp: str | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = RestoreSpec(table_path=table, version=version, timestamp=timestamp, token=token)
    return run_spec(spark, spec, storage_options)


def run_clone(
    spark: Any,
    table: str,
    source: str,
    version: int | None = None,
    timestamp: str | None = None,
    replace: bool = False,
    table_properties: Mapping[str, str] | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = CloneSpec(
        table_path=table,
        source_path=source,
        version=version,
        timestamp=timestamp,
        replace=replace,
        table_properties=_pairs(table_properties),
        token=token,
    )
    return run_spec(spark, spec, storage_options)


def run_convert(
    spark: Any,
    table: str,
    partition_by: str | None = None,
    table_properties: Mapping[str, str] | None = None,
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    spec = ConvertSpec(
        table_path=table, partition_by=partition_by, table_properties=_pairs(table_properties), token=token
    )
    return run_spec(spark, spec, storage_options)


def run_generate(
    spark: Any,
    table: str,
    mode: str = GENERATE_MODES[0],
    token: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> CommandResult:
    return run_spec(spark, GenerateSpec(table_path=table, mode=mode, token=token), storage_options)
