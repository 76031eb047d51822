"""Writes in ``arrow`` mode: ``mapInArrow`` tasks write parquet with pyarrow.

Each task gets its rows as Arrow batches, sorted by the partition columns
(as Spark's own file writer sorts them), so one file is open at a time. It
writes each run of one partition value as one file,
``<hive folder>/part-<task>-<uuid>.c000.snappy.parquet``, with pyarrow
(snappy, INT64 microsecond timestamps, Spark's decimal and nested layouts),
puts it through the storage seam (directly in place on the local
filesystem), and returns one row per file: path, size, partition values and
the stats, which come from the writer's own footer
(:func:`~airflow_delta_provider.delta.file_stats.stats_from_footer`), so no file
is read back. Files are opened on their first row: none holds no rows.

Cleaning up. Before a task writes a byte of a file it leaves an empty
*marker* at the same relative path under ``_delta_staging_<uuid>/`` (a
hidden folder VACUUM reclaims when abandoned). The driver then knows every
file the job may have written, whichever task attempts failed, were killed
or ran speculatively: after the job it deletes the files no returned row
names (failed attempts), and after a failed job every one of them, once the
job's tasks have stopped. The markers go last.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any

from pyspark.sql import DataFrame

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import StorageError
from airflow_delta_provider.delta.partitions import encode_path
from airflow_delta_provider.delta.storage import TableStorage
from airflow_delta_provider.delta.storage.hidden_paths import STAGING_PREFIX
from airflow_delta_provider.spark.read.arrow_source import worker_root
from airflow_delta_provider.spark.read.files import column
from airflow_delta_provider.spark.runtime.session import is_connect
from airflow_delta_provider.spark.runtime.worker_env import forward_store_env

log = logging.getLogger(__name__)

#: One row per written file.
RESULT_SCHEMA = "path string, size long, modification_time long, partition_values string, stats string"
#: Arrow bytes a task buffers before writing them as row groups.
ROW_GROUP_BYTES = 64 * 1024 * 1024
#: How long a failed write waits for its job's remaining tasks to stop before cleaning up.
TASK_STOP_TIMEOUT_S = 60.0
#: Parquet as Spark writes it for Delta (session.REQUIRED_CONF).
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "snappy",
    "coerce_timestamps": "us",
    "allow_truncated_timestamps": False,
    "use_compliant_nested_type": True,  # LIST <name> { repeated group list { element } }, like Spark
    "store_decimal_as_integer": True,  # INT32/INT64 up to precision 18, like Spark
    "store_schema": False,
    "write_statistics": True,
}


@dataclass(frozen=True)
class WritePlan:
    """What each task needs (pickled into the task; no secret in it)."""

    root: str
    staging: str
    data_columns: tuple[str, ...]  # the columns files hold, in order
    partition_columns: tuple[str, ...]
    partition_types: Mapping[str, str]
    leaves: Sequence[tuple[tuple[str, ...], Any]]
    #: Column mapping ``id`` mode: the parquet field id of each field path.
    field_ids: Mapping[tuple[str, ...], int] = field(default_factory=dict)
    #: A folder of the root the files go under (``_change_data`` for change data).
    prefix: str = ""
    #: ``delta.randomizeFilePrefixes``: files go into a folder of this many random characters
    #: instead of their partition folder (0: partition folders).
    random_prefix_length: int = 0


def write_arrow(
    frame: DataFrame,
    storage: TableStorage,
    data_columns: Sequence[str],
    partition_columns: Sequence[str],
    partition_types: Mapping[str, str],
    leaves: Sequence[tuple[tuple[str, ...], Any]],
    field_ids: Mapping[tuple[str, ...], int] | None = None,
    *,
    prefix: str = "",
    random_prefix_length: int = 0,
) -> list[AddFile]:
    """Write ``frame`` (already conformed and constraint-guarded) as files of
    the table in ``storage``; the ``add`` actions, none for a file of no rows.

    ``data_columns`` are the columns files hold (the table's non-partition
    columns, in order); they keep the frame's types and nullability, as
    Spark's writer keeps them. ``field_ids`` (column mapping ``id`` mode)
    are written as parquet field ids, by field path. ``prefix`` is a folder
    of the root the files go under; ``random_prefix_length`` (when not 0) the
    length of the random folder name each file goes into instead of its
    partition folder (``delta.randomizeFilePrefixes``).
    """
    spark = frame.sparkSession
    plan = WritePlan(
        root=worker_root(storage.location),
        staging=f"{STAGING_PREFIX}{uuid.uuid4()}",
        data_columns=tuple(data_columns),
        partition_columns=tuple(partition_columns),
        partition_types=dict(partition_types),
        leaves=list(leaves),
        field_ids=dict(field_ids or {}),
        prefix=prefix,
        random_prefix_length=random_prefix_length,
    )
    if partition_columns:  # as Spark's file writer orders a task's rows
        frame = frame.sortWithinPartitions(*[column(c) for c in partition_columns])
    group = f"delta-arrow-write-{uuid.uuid4()}"
    forward_store_env(spark)
    connect = is_connect(spark)
    try:
        with _connect_tag(spark, group) if connect else _job_group(spark.sparkContext, group):
            rows = frame.mapInArrow(partial(write_task, plan), RESULT_SCHEMA).collect()
    except BaseException:
        # An interrupted driver leaves no task writing.
        if connect:
            _interrupt_tag(spark, group)
            _wait_for_markers(storage, plan.staging)
        else:
            spark.sparkContext.cancelJobGroup(group)
            _wait_for_tasks(spark.sparkContext, group)
        try:
            _discard(storage, plan.staging, keep=set())
        except (OSError, StorageError) as exc:  # the job's own error is the one to report
            log.warning("could not remove the files of a failed write under %s: %s", plan.staging, exc)
        raise
    adds = [
        AddFile(
            path=encode_path(r["path"]),
            partition_values=json.loads(r["partition_values"]),
            size=r["size"],
            modification_time=r["modification_time"],
            data_change=True,
            stats=r["stats"],
        )
        for r in rows
    ]
    adds.sort(key=lambda a: a.path)
    try:
        _discard(storage, plan.staging, keep={r["path"] for r in rows})
    except (OSError, StorageError) as exc:  # hidden leftovers; VACUUM reclaims them
        log.warning("could not remove the staging markers %s: %s", plan.staging, exc)
    return adds


# --- cleanup (driver) -------------------------------------------------------------


def _discard(storage: TableStorage, staging: str, keep: set[str]) -> None:
    """Delete the files marked under ``staging`` that ``keep`` does not name, then the markers."""
    markers = [m.path for m in storage.list_tree(staging) if not m.is_dir]
    prefix = staging + "/"
    stray = [m[len(prefix) :] for m in markers if m[len(prefix) :] not in keep]
    if stray:
        storage.delete_many(stray)
    if storage.is_local:
        shutil.rmtree(storage.location.child(staging), ignore_errors=True)
    elif markers:
        storage.delete_many(markers)


@contextmanager
def _job_group(sc: Any, group: str) -> Iterator[None]:
    """Run the block's jobs in job group ``group``, restoring the caller's group after."""
    keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    saved = {k: sc.getLocalProperty(k) for k in keys}
    sc.setJobGroup(group, "Delta data files (arrow I/O)")
    try:
        yield
    finally:
        for k, v in saved.items():
            sc.setLocalProperty(k, v)


@contextmanager
def _connect_tag(spark: Any, tag: str) -> Iterator[None]:
    """Spark Connect's job group: the block's operations carry ``tag``."""
    spark.addTag(tag)
    try:
        yield
    finally:
        spark.removeTag(tag)


def _interrupt_tag(spark: Any, tag: str) -> None:
    try:
        spark.interruptTag(tag)
    except Exception as exc:
        log.warning("could not interrupt the operations tagged %s: %s", tag, exc)


def _wait_for_markers(
    storage: TableStorage, staging: str, timeout: float = TASK_STOP_TIMEOUT_S, quiet_s: float = 1.0
) -> None:
    """Over Spark Connect, where no task status can be read: wait until no
    new marker has appeared under ``staging`` for ``quiet_s``. A task marks a
    file before it writes a byte of it, so a quiet folder has no task starting
    a file; the cleanup then deletes what the markers name."""
    deadline = time.monotonic() + timeout
    seen: set[str] | None = None
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = {m.path for m in storage.list_tree(staging) if not m.is_dir}
        except (OSError, StorageError):
            return
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return
        time.sleep(0.1)
    log.warning("files of %s still appear after %.0f s; cleaning up anyway", staging, timeout)


def _wait_for_tasks(sc: Any, group: str, timeout: float = TASK_STOP_TIMEOUT_S) -> None:
    """Wait until the jobs of ``group`` have ended and none of their tasks runs.

    A failed job returns while its other tasks are still being killed; one
    of them could write a file after the cleanup. The job's end is seen
    first (so every task start before it is counted), then the running tasks.
    """
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            if info is None:
                continue
            if info.status == "RUNNING":
                busy = True
                break
            for stage_id in info.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None and stage.numActiveTasks > 0:
                    busy = True
        if not busy:
            return
        time.sleep(0.05)
    log.warning("tasks of %s still run after %.0f s; cleaning up anyway", group, timeout)


# --- the task (executor) --------------------------------------------------------------


def write_task(plan: WritePlan, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` function: write the task's rows, one row per file."""
    from pyspark import TaskContext

    from airflow_delta_provider.delta.storage import open_storage

    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    storage = open_storage(plan.root)
    writer: _FileWriter | None = None
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            for values, piece in split_runs(batch, plan.partition_columns, plan.partition_types):
                if writer is not None and writer.values != values:
                    yield writer.finish()
                    writer = None
                if writer is None:
                    writer = _FileWriter(storage, plan, task, values, piece.schema)
                writer.write(piece)
        if writer is not None:
            yield writer.finish()
            writer = None
    finally:
        if writer is not None:
            writer.abort()


def split_runs(
    batch: Any, partition_columns: Sequence[str], types: Mapping[str, str]
) -> Iterator[tuple[dict[str, str | None], Any]]:
    """(serialized partition values, rows) for each run of one partition value
    in ``batch`` (rows sorted by the partition columns)."""
    import pyarrow.compute as pc

    from airflow_delta_provider.delta.partitions import serialize_partition_value

    if not partition_columns:
        yield {}, batch
        return
    names = {name.lower(): name for name in batch.schema.names}
    columns = {c: batch.column(names[c.lower()]) for c in partition_columns}
    n = batch.num_rows
    starts = [0]
    if n > 1:
        changed = None
        for column in columns.values():
            head, tail = column.slice(0, n - 1), column.slice(1)
            same = pc.or_kleene(
                pc.fill_null(pc.equal(tail, head), False),
                pc.and_(pc.is_null(tail), pc.is_null(head)),
            )
            step = pc.invert(same)
            changed = step if changed is None else pc.or_(changed, step)
        starts += [int(i) + 1 for i in pc.indices_nonzero(changed).to_pylist()]
    starts.append(n)
    for start, end in pairwise(starts):
        values = {c: serialize_partition_value(columns[c][start].as_py(), types[c]) for c in partition_columns}
        yield values, batch.slice(start, end - start)


def with_field_ids(schema: Any, ids: Mapping[tuple[str, ...], int]) -> Any:
    """``schema`` (Arrow) with ``PARQUET:field_id`` on each field whose path
    (through structs; ``element``, ``key``, ``value`` through lists and
    maps, as :func:`~airflow_delta_provider.delta.schema.fields.walk_fields` names
    them) has an id."""
    import pyarrow as pa

    from airflow_delta_provider.delta.schema.types import ELEMENT, KEY, VALUE

    if not ids:
        return schema

    def typed(t: Any, path: tuple[str, ...]) -> Any:
        if pa.types.is_struct(t):
            return pa.struct([labelled(t.field(i), path) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            item = t.item_field.with_type(typed(t.item_type, (*path, VALUE)))
            return pa.map_(typed(t.key_type, (*path, KEY)), item)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            value = t.value_field.with_type(typed(t.value_type, (*path, ELEMENT)))
            return pa.list_(value) if pa.types.is_list(t) else pa.large_list(value)
        return t

    def labelled(f: Any, prefix: tuple[str, ...]) -> Any:
        path = (*prefix, f.name)
        f = f.with_type(typed(f.type, path))
        fid = ids.get(path)
        return f if fid is None else f.with_metadata({**(f.metadata or {}), b"PARQUET:field_id": str(fid).encode()})

    return pa.schema([labelled(f, ()) for f in schema], metadata=schema.metadata)


class _FileWriter:
    """One data file being written by a task."""

    def __init__(
        self, storage: TableStorage, plan: WritePlan, task: int, values: dict[str, str | None], schema: Any
    ) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from airflow_delta_provider.delta.partitions import partition_dir, random_file_prefix

        self.storage = storage
        self.plan = plan
        self.values = values
        if plan.random_prefix_length:
            folder = random_file_prefix(plan.random_prefix_length)
        elif plan.partition_columns:
            folder = partition_dir(plan.partition_columns, values, plan.partition_types)
        else:
            folder = ""
        name = f"part-{task:05d}-{uuid.uuid4()}.c000.snappy.parquet"
        self.rel = "/".join(p for p in (plan.prefix, folder, name) if p)
        storage.put(f"{plan.staging}/{self.rel}", b"")  # the marker, before any byte of the file
        if storage.is_local:
            self.local = storage.location.child(self.rel)
            os.makedirs(os.path.dirname(self.local), exist_ok=True)
        else:
            fd, self.local = tempfile.mkstemp(suffix=".parquet", prefix="delta-arrow-")
            os.close(fd)
        self.columns = list(plan.data_columns)
        self.schema = with_field_ids(pa.schema([schema.field(c) for c in self.columns]), plan.field_ids)
        self.writer = pq.ParquetWriter(self.local, self.schema, **PARQUET_OPTIONS)
        self.pending: list[Any] = []
        self.pending_bytes = 0

    def write(self, batch: Any) -> None:
        import pyarrow as pa

        from airflow_delta_provider.spark.read.arrow_conform import fill_hidden_nulls

        data = batch.select(self.columns)
        data = pa.RecordBatch.from_arrays([fill_hidden_nulls(c) for c in data.columns], schema=data.schema)
        self.pending.append(data)
        self.pending_bytes += data.nbytes
        if self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending, schema=self.schema))
        self.pending, self.pending_bytes = [], 0

    def finish(self) -> Any:
        """Close the file, put it in place; its result row (a one-row batch)."""
        import pyarrow as pa

        from airflow_delta_provider.delta.file_stats import stats_from_footer, stats_json

        self._flush()
        self.writer.close()
        stats = stats_json(stats_from_footer(self.writer.writer.metadata, self.plan.leaves))
        if self.storage.is_local:
            st = os.stat(self.local)
            size, mtime = st.st_size, st.st_mtime_ns // 1_000_000
        else:
            with open(self.local, "rb") as fh:
                data = fh.read()
            self.storage.put(self.rel, data)
            size, mtime = len(data), int(time.time() * 1000)
            os.remove(self.local)
        row = {
            "path": self.rel,
            "size": size,
            "modification_time": mtime,
            "partition_values": json.dumps(self.values),
            "stats": stats,
        }
        return pa.RecordBatch.from_pylist([row], schema=_result_arrow_schema())

    def abort(self) -> None:
        """Drop a file that will not be finished (its marker stays for the driver)."""
        with suppress(OSError):
            self.writer.close()
        with suppress(FileNotFoundError):
            os.remove(self.local)


def _result_arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("path", pa.string()),
            ("size", pa.int64()),
            ("modification_time", pa.int64()),
            ("partition_values", pa.string()),
            ("stats", pa.string()),
        ]
    )


__all__ = ["PARQUET_OPTIONS", "RESULT_SCHEMA", "WritePlan", "split_runs", "write_arrow", "write_task"]
