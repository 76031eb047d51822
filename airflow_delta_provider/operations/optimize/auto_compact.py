"""Auto compaction after a write (``delta.autoOptimize.autoCompact``), as
delta-spark's ``AutoCompact`` post-commit hook does it.

APPEND, UPDATE, DELETE and MERGE call :func:`after_write` once their commit
has landed. On a table with ``delta.autoOptimize.autoCompact=true`` it looks
at the partitions the write added files to (delta-spark's
``autoCompact.modifiedPartitionsOnly``), and compacts those that hold at
least ``spark.databricks.delta.autoCompact.minNumFiles`` (50) small files:
files under half the target size (delta-spark's ``minFileSize``, half of
``maxFileSize``). The target is ``spark.databricks.delta.autoCompact.maxFileSize``
when the session sets it, else ``delta.targetFileSize``, else 128 MiB.

The compaction is an OPTIMIZE of those partitions' small files
(:func:`~.optimize.optimize_files`), in a commit of its own recorded as
delta-spark records it: ``OPTIMIZE`` with ``auto: true`` and the chosen
partitions as its ``predicate``. Its version goes into the write's result
metrics as ``autoCompactVersion``; the write's own version stays the result.
A failed compaction never fails the write: it is logged as a warning naming
the table, and the files it wrote are removed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping

import pyarrow.compute as pc
from pyspark.sql import SparkSession

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.partition_sql import partitions_condition
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_properties import target_file_size
from airflow_delta_provider.operations.result import CommandResult

log = logging.getLogger(__name__)

#: delta-spark's ``autoCompact.minNumFiles`` session setting, and its default.
MIN_NUM_FILES_CONF = "spark.databricks.delta.autoCompact.minNumFiles"
DEFAULT_MIN_NUM_FILES = 50
#: delta-spark's ``autoCompact.maxFileSize`` session setting (bytes).
MAX_FILE_SIZE_CONF = "spark.databricks.delta.autoCompact.maxFileSize"
#: The result metric holding the compaction's version.
VERSION_METRIC = "autoCompactVersion"


def after_write(
    spark: SparkSession,
    target: DeltaTable,
    result: CommandResult,
    added: Iterable[AddFile],
    configuration: Mapping[str, str],
    io: str = "auto",
) -> CommandResult:
    """Compact the partitions ``added`` (the write's new files) went to, when
    the table's ``configuration`` (as the write committed it) asks for auto
    compaction and they hold enough small files; ``result``, with
    ``autoCompactVersion`` in its metrics when a compaction committed."""
    if result.version is None:
        return result
    try:
        enabled = table_properties.auto_compact_enabled(configuration)
    except InvalidInputError as exc:  # another engine's odd value: the write has committed, go on
        log.warning("auto compaction of table %s skipped: %s", target.uri, exc)
        return result
    if not enabled:
        return result
    partitions = {_key(a.partition_values) for a in added}
    if not partitions:
        return result
    try:
        compacted = _compact(spark, target, partitions, io)
    except Exception as exc:  # the write has committed: it must not fail now
        log.warning(
            "auto compaction of table %s after version %s failed; the write stays committed: %s: %s",
            target.uri, result.version, type(exc).__name__, exc,
        )  # fmt: skip
        return result
    if compacted is not None:
        return dataclasses.replace(result, metrics={**result.metrics, VERSION_METRIC: compacted})
    return result


def _key(partition_values: Mapping[str, str | None]) -> str:
    return json.dumps(dict(partition_values), sort_keys=True)


def _compact(spark: SparkSession, target: DeltaTable, partitions: set[str], io: str) -> int | None:
    """The compaction of the chosen partitions; its version, or None when none qualifies."""
    from airflow_delta_provider.operations.optimize.spark import optimize_files

    snapshot = target.snapshot()
    given = spark.conf.get(MAX_FILE_SIZE_CONF, None)
    size = target_file_size(snapshot.configuration, int(given) if given else None)
    minimum = int(spark.conf.get(MIN_NUM_FILES_CONF, str(DEFAULT_MIN_NUM_FILES)) or DEFAULT_MIN_NUM_FILES)
    # Counted on the columnar file list: no AddFile is built unless a partition qualifies.
    keys = [snapshot.column_mapping.physical_column(c) for c in snapshot.metadata.partition_columns]
    table = snapshot.add_table(keys)
    table = table.filter(pc.less(table.column("size"), size // 2))
    small: dict[str, list[str]] = {}
    for row in table.select(["path", *keys]).to_pylist():
        key = _key({k: row[k] for k in keys})
        if key in partitions:
            small.setdefault(key, []).append(row["path"])
    chosen = {k: paths for k, paths in small.items() if len(paths) >= minimum}
    if not chosen:
        return None
    wanted = {path for paths in chosen.values() for path in paths}
    by_key: dict[str, list[AddFile]] = {}
    for f in snapshot.files:
        if f.path in wanted:
            by_key.setdefault(_key(f.partition_values), []).append(f)
    files = [f for k in sorted(chosen) for f in by_key.get(k, [])]
    predicate = _predicate([json.loads(k) for k in sorted(chosen)])
    compacted = optimize_files(spark, target, snapshot, files, size, predicate=predicate, auto=True, io=io)
    return compacted.version


def _predicate(partitions: list[dict[str, str | None]]) -> list[str]:
    """The chosen partitions as one SQL predicate, as delta-spark records them (none: unpartitioned)."""
    condition = partitions_condition(partitions)
    return [condition] if condition else []


__all__ = ["DEFAULT_MIN_NUM_FILES", "MIN_NUM_FILES_CONF", "VERSION_METRIC", "after_write"]
