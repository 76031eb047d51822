"""One frozen dataclass per operation: its arguments, defined once.

The operator builds one; the Spark application parses its argv back into the
same class (:mod:`.parser`) and runs the command for it. A new option is a new
field here, plus the operator argument that fills it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from airflow_delta_provider.requests.base import OperationRequest
from airflow_delta_provider.requests.fields import (
    joined,
    negated_switch,
    option,
    pairs,
    repeated,
    switch,
)
from airflow_delta_provider.requests.sources import SOURCE_FORMATS, check_source

#: Write modes of APPEND.
APPEND_MODES = ("append", "overwrite")
#: How an overwrite treats partitions (delta-spark's ``partitionOverwriteMode``): ``static``
#: replaces the whole table (or what ``replace_where`` matches), ``dynamic`` only the
#: partitions the source writes.
PARTITION_OVERWRITE_MODES = ("static", "dynamic")
STATIC_OVERWRITE, DYNAMIC_OVERWRITE = PARTITION_OVERWRITE_MODES
#: Kinds of VACUUM: ``full`` lists the table folder and also deletes files the log never
#: named; ``lite`` finds the removable files from the log alone (delta-spark's VACUUM LITE).
VACUUM_MODES = ("full", "lite")
FULL_VACUUM, LITE_VACUUM = VACUUM_MODES
#: Output formats of CHANGES (only ``parquet`` with ``io="arrow"``).
CHANGES_OUTPUT_FORMATS = ("parquet", "json", "csv", "orc")
#: What GENERATE writes (delta-spark's ``GENERATE <mode> FOR TABLE``): symlink format manifests.
GENERATE_MODES = ("symlink_format_manifest",)


@dataclass(frozen=True, kw_only=True)
class UpdateRequest(OperationRequest):
    operation = "update"
    summary = "conditional UPDATE"

    condition: str | None = option(help="SQL predicate; all rows when absent")
    set_exprs: tuple[tuple[str, str], ...] = pairs(flag="--set", metavar="COL=SQL", required=True)


@dataclass(frozen=True, kw_only=True)
class DeleteRequest(OperationRequest):
    operation = "delete"
    summary = "conditional DELETE"

    condition: str | None = option(help="SQL predicate; all rows when absent")


@dataclass(frozen=True, kw_only=True)
class AppendRequest(OperationRequest):
    operation = "append"
    summary = "append (or overwrite) rows from files, or from a SQL query"

    source: str | None = option(help="path of the data to append (or give --source-sql)")
    format: str | None = option(choices=SOURCE_FORMATS, help="the source's format (required with --source)")
    source_sql: str | None = option(metavar="SQL", help="a query whose rows to append, over --source-views")
    source_views: str | None = option(
        metavar="JSON",
        help='the views --source-sql reads, e.g. {"orders": {"path": "s3://b/orders", "format": "delta", '
        '"version": 3}, "fx": {"path": "/data/fx.csv", "format": "csv", "options": {"header": "true"}}}',
    )
    mode: str = option("append", choices=APPEND_MODES)
    table_schema: str | None = option(
        metavar="JSON",
        help="Delta schema of a table this creates (or replaces with --overwrite-schema); its field metadata may "
        "declare generated (delta.generationExpression) and identity (delta.identity.*) columns",
    )
    merge_schema: bool = switch()
    overwrite_schema: bool = switch()
    replace_where: str | None = option(
        metavar="SQL", help="with --mode overwrite: replace only the rows this predicate matches, in one commit"
    )
    partition_overwrite_mode: str | None = option(
        flag="--partition-overwrite",
        choices=PARTITION_OVERWRITE_MODES,
        help="with --mode overwrite: dynamic replaces only the partitions the source writes (default: static)",
    )
    partition_by: tuple[str, ...] = repeated(metavar="COL")
    cluster_by: tuple[str, ...] = joined(
        metavar="C1,C2", help="liquid clustering columns of a table this creates (never with --partition-by)"
    )
    txn_app_id: str | None = option()
    txn_version: int | None = option(parse=int)
    options: tuple[tuple[str, str], ...] = pairs(flag="--option", dest="option")
    table_properties: tuple[tuple[str, str], ...] = pairs(
        flag="--property", dest="property", help="table property (delta.*)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_source(self.source, self.source_sql, self.source_views)
        if self.source is not None and self.format is None:
            raise ValueError("append: give the source's format (--format) with --source")
        if self.source_sql is not None and (self.format is not None or self.options):
            raise ValueError("append: --format and --option describe a --source path; a query's views carry their own")
        if self.cluster_by and self.partition_by:
            raise ValueError("append: a table is partitioned (--partition-by) or clustered (--cluster-by), not both")


@dataclass(frozen=True, kw_only=True)
class MergeRequest(OperationRequest):
    operation = "merge"
    summary = "MERGE (upsert) a source into the table"

    source: str | None = option(help="path of the source data (or give --source-sql)")
    source_format: str = option("parquet", choices=SOURCE_FORMATS)
    source_sql: str | None = option(metavar="SQL", help="a query whose rows are the source, over --source-views")
    source_views: str | None = option(metavar="JSON", help="the views --source-sql reads (as append's)")
    on: str = option(required=True, help='join condition, e.g. "t.id = s.id"')
    clauses: str = option(
        required=True,
        help='ordered WHEN clauses as JSON, e.g. [{"when": "matched", "update": "*"}, '
        '{"when": "not_matched", "insert": "*"}]',
    )
    target_alias: str = option("t")
    source_alias: str = option("s")
    source_version: int | None = option(parse=int, help="version of a delta source (default: its latest)")
    merge_schema: bool = switch(help="let * clauses add the source's new columns")
    source_options: tuple[tuple[str, str], ...] = pairs(flag="--option", dest="option", help="source reader option")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_source(self.source, self.source_sql, self.source_views)
        if self.source_sql is not None and (self.source_version is not None or self.source_options):
            raise ValueError(
                "merge: --source-version and --option describe a --source path; a query's views carry their own"
            )


@dataclass(frozen=True, kw_only=True)
class CheckpointRequest(OperationRequest):
    operation = "checkpoint"
    summary = "checkpoint the latest version"
    runs_without_spark = True

    cleanup_logs: bool = switch()

    def needs_spark(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class VacuumRequest(OperationRequest):
    """With spark-submit, executors delete the files; with no Spark, this process does."""

    operation = "vacuum"
    summary = "delete unreferenced files"
    runs_without_spark = True

    retention_hours: float | None = option(parse=float)
    dry_run: bool = switch()
    enforce_retention: bool = negated_switch(flag="--no-retention-check")
    lite: bool = switch(help="VACUUM LITE: find the removable files from the log, list no data folder")


@dataclass(frozen=True, kw_only=True)
class ReorgRequest(OperationRequest):
    operation = "reorg"
    summary = "REORG ... APPLY (PURGE) of deletion vectors"

    purge: bool = switch(required=True, to_command=False, help="rewrite files that carry deletion vectors")
    min_deleted_ratio: float = option(0.0, parse=float, help="only files whose vector hides more than this share")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.min_deleted_ratio < 1.0:
            raise ValueError(f"min_deleted_ratio must be at least 0 and below 1, not {self.min_deleted_ratio!r}")


@dataclass(frozen=True, kw_only=True)
class OptimizeRequest(OperationRequest):
    operation = "optimize"
    summary = "OPTIMIZE: compact small files, Z-order, or cluster a liquid-clustered table"

    where: str | None = option(help="a condition on partition columns: only those partitions")
    target_size: int | None = option(parse=int, help="bytes per file (default: delta.targetFileSize, else 128 MiB)")
    zorder_by: tuple[str, ...] = joined(metavar="C1,C2", help="Z-order by these columns")
    full: bool = switch(help="OPTIMIZE FULL: on a clustered table, also recluster the files clustered by other columns")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.full and self.zorder_by:
            raise ValueError("optimize: --full reclusters a clustered table, which cannot be Z-ordered")
        if self.target_size is not None and self.target_size <= 0:
            raise ValueError(f"target_size must be positive, not {self.target_size!r}")


#: Features whose drop rewrites data files, so ALTER needs Spark (the core's
#: ``drop_feature.PREPARE_WITH_REWRITE``; requests may not import the core,
#: tests/requests check the two agree).
REWRITING_DROPS = ("deletionVectors", "typeWidening", "typeWidening-preview")


@dataclass(frozen=True, kw_only=True)
class AlterRequest(OperationRequest):
    operation = "alter"
    summary = "ALTER TABLE: one schema or property change"
    runs_without_spark = True  # except to add a CHECK constraint (needs_spark)
    exactly_one_of = ("change", "drop_feature")

    change: str | None = option(
        help='the change as JSON, e.g. {"rename_column": {"column": "a", "to": "b"}}, {"drop_columns": ["a"]}, '
        '{"add_columns": [{"name": "c", "type": "long"}]}, {"alter_column": {"column": "c", "comment": "..."}}, '
        '{"set_properties": {"k": "v"}}, {"unset_properties": ["k"]}, '
        '{"add_constraint": {"name": "positive", "expression": "amount > 0"}} (checks the rows: needs Spark), '
        '{"drop_constraint": {"name": "positive", "if_exists": true}}, {"cluster_by": ["a", "b"]}, '
        '{"cluster_by": "none"}, {"drop_feature": {"name": "inCommitTimestamp", "truncate_history": false}} '
        "(checkConstraints, inCommitTimestamp, vacuumProtocolCheck, rowTracking, v2Checkpoint; "
        "deletionVectors and typeWidening rewrite data files: need Spark)",
    )
    drop_feature: str | None = option(
        metavar="NAME",
        help="drop a table feature (ALTER TABLE ... DROP FEATURE NAME): "
        '--change \'{"drop_feature": {"name": NAME}}\' in short',
    )
    truncate_history: bool = switch(
        help="with --drop-feature: truncate the history (DROP FEATURE ... TRUNCATE HISTORY) instead of "
        "protecting it with checkpointProtection, in two runs: the first removes the feature's traces and asks "
        "to run again after delta.dropFeatureTruncateHistory.retentionDuration (24 hours)"
    )
    enable_column_mapping: bool = switch(
        help="turn column mapping on (mode name) in the same commit when RENAME or DROP needs it"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.truncate_history and self.drop_feature is None:
            raise ValueError(
                "alter: truncate_history goes with drop_feature (with change, it is the drop_feature change's "
                'own key: {"drop_feature": {"name": ..., "truncate_history": true}})'
            )

    def needs_spark(self) -> bool:
        """Adding a CHECK constraint (Spark checks the table's rows), and
        dropping a feature whose preparation rewrites data files."""
        if self.drop_feature is not None:
            return self.drop_feature in REWRITING_DROPS
        try:
            change = json.loads(self.change or "")
        except json.JSONDecodeError:
            return False  # the command refuses it, with no Spark
        if not isinstance(change, dict):
            return False
        drop = change.get("drop_feature")
        return "add_constraint" in change or (isinstance(drop, dict) and drop.get("name") in REWRITING_DROPS)


@dataclass(frozen=True, kw_only=True)
class RestoreRequest(OperationRequest):
    operation = "restore"
    summary = "RESTORE the table to an earlier version"
    runs_without_spark = True
    exactly_one_of = ("version", "timestamp")

    version: int | None = option(parse=int, help="the version to restore")
    timestamp: str | None = option(
        help="restore the newest version committed at or before this time (ISO 8601, UTC if no zone)"
    )

    def needs_spark(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class ConvertRequest(OperationRequest):
    """The core does it with no Spark: it reads only the files' footers."""

    operation = "convert"
    summary = "CONVERT TO DELTA: a folder of Parquet files becomes a Delta table in place"
    runs_without_spark = True

    partition_by: str | None = option(
        metavar='"COL TYPE, ..."',
        help='the Hive partition columns of the folders, in order, e.g. "day date, region string"',
    )
    table_properties: tuple[tuple[str, str], ...] = pairs(
        flag="--property", dest="property", help="table property (delta.*) of the new table"
    )

    def needs_spark(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class GenerateRequest(OperationRequest):
    """The core does it with no Spark: it reads the log and writes the manifests."""

    operation = "generate"
    summary = "GENERATE symlink_format_manifest: the manifests Presto, Trino, Athena and Redshift Spectrum read"
    runs_without_spark = True

    mode: str = option(
        GENERATE_MODES[0],
        choices=GENERATE_MODES,
        help="what to generate: symlink_format_manifest (the only mode, and the default)",
    )

    def needs_spark(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class CloneRequest(OperationRequest):
    """SHALLOW CLONE into the table (the positional TABLE, as every operation
    names the table it changes). The core does it with no Spark: it writes
    only the new table's log."""

    operation = "clone"
    summary = "SHALLOW CLONE: a new table (TABLE) whose files are those of --source"
    runs_without_spark = True

    source: str = option(required=True, help="the Delta table to clone: a path or URI")
    version: int | None = option(parse=int, help="the source's version to clone (default: its latest)")
    timestamp: str | None = option(
        help="clone the source's newest version committed at or before this time (ISO 8601, UTC if no zone)"
    )
    replace: bool = switch(help="replace TABLE if it is a Delta table already (CREATE OR REPLACE ... CLONE)")
    table_properties: tuple[tuple[str, str], ...] = pairs(
        flag="--property", dest="property", help="table property (delta.*) overriding the source's"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.version is not None and self.timestamp is not None:
            raise ValueError("clone: give the source's --version or --timestamp, not both")

    def needs_spark(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True)
class ChangesRequest(OperationRequest):
    operation = "changes"
    summary = "write the change data feed of a version range"

    start: int = option(required=True, parse=int, help="the first version whose changes to read")
    end: int | None = option(parse=int, help="the last version whose changes to read (default: the latest)")
    output: str = option(required=True, help="the folder to write the changed rows to (replaced)")
    output_format: str = option("parquet", choices=CHANGES_OUTPUT_FORMATS, help="default: parquet")


#: Every request class, by operation, in the CLI's order.
REQUESTS: dict[str, type[OperationRequest]] = {
    cls.operation: cls
    for cls in (
        UpdateRequest,
        DeleteRequest,
        AppendRequest,
        MergeRequest,
        CheckpointRequest,
        VacuumRequest,
        ReorgRequest,
        OptimizeRequest,
        AlterRequest,
        RestoreRequest,
        ChangesRequest,
        ConvertRequest,
        GenerateRequest,
        CloneRequest,
    )
}
#: Operations of the Spark CLI (``python -m airflow_delta_provider.spark <op>``).
OPERATIONS = tuple(REQUESTS)
#: Operations the core runs with no Spark at all (``engine="python"``).
PYTHON_ENGINE_OPERATIONS = tuple(op for op, cls in REQUESTS.items() if cls.runs_without_spark)
