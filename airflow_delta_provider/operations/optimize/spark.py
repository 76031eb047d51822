"""OPTIMIZE: compact small files, Z-order, or cluster, as delta-spark's ``OptimizeTableCommand``.

The core plans the bins (:mod:`airflow_delta_provider.operations.optimize.plan`); each
bin is read (deletion vectors applied) and written back:

- compaction: one file per bin (``coalesce(1)``, no shuffle);
- Z-order: range-partitioned by the Z-order key (:mod:`..zorder`) into
  ``ceil(bin size / target size)`` files, each sorted by it;
- a liquid-clustered table (delta-spark's ``ClusteringStrategy``): the same,
  by the Hilbert key of the clustering columns (:mod:`..hilbert`), over one
  bin (one ZCube) of the files delta-spark OSS picks
  (:func:`~airflow_delta_provider.delta.table_features.clustering.files_to_cluster`):
  those not yet clustered, with the files of ZCubes still below the
  complete size (``MIN_CUBE_SIZE_CONF``, 100 GiB); each file written is
  marked ``clusteringProvider: "liquid"`` with delta-spark's ``ZCUBE_*`` tags.

Bins are rewritten concurrently, :data:`MAX_CONCURRENT_BINS` at a time; after
a failure, the bins not started are not, and every file written is removed.
The commit removes the old files and adds the new ones, all with
``dataChange=false``: the rows are the same, so readers of changes skip it, and
a concurrent append does not conflict with it (only the rewritten files were
read). A written row count that differs from the live rows read is an
internal error, and nothing is committed. With nothing to rewrite, nothing is
committed and ``version`` is None.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.scan.skipping import Predicate, partition_filter
from airflow_delta_provider.delta.schema.layout_columns import check_layout_columns
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering, gate
from airflow_delta_provider.delta.table_properties import target_file_size
from airflow_delta_provider.operations.optimize.metrics import OptimizeMetrics
from airflow_delta_provider.operations.optimize.plan import Bin, plan_bins
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.reorg.spark import check_rows_kept, file_size_metrics
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.spark import conditions
from airflow_delta_provider.spark.runtime.io_mode import resolve_io
from airflow_delta_provider.spark.runtime.worker_env import forward_store_env

OPERATION = "OPTIMIZE"
#: delta-spark's session setting for the size of a complete ZCube (bytes).
MIN_CUBE_SIZE_CONF = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.threshold"
#: Bins rewritten at once at most (each is one Spark job).
MAX_CONCURRENT_BINS = 8


def run(spark: SparkSession, spec: OptimizeSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """OPTIMIZE the spec's table [WHERE] [ZORDER BY] [FULL]; ``version`` None when nothing was to do."""
    started = time.monotonic()
    target = DeltaTable(spec.table_path, storage_options)
    snapshot = target.snapshot()
    # Refused by name even when there is nothing to compact, as delta-spark's OPTIMIZE is.
    gate.check_writable(snapshot.protocol, snapshot.metadata)
    zorder_by = _check_zorder_columns(snapshot, list(spec.zorder_by))
    if spec.full and not clustering.clustering_columns(snapshot):
        raise InvalidInputError("OPTIMIZE FULL (full) reclusters a liquid-clustered table; this table is not clustered")
    files = _files_where(spark, snapshot, spec.where)
    size = target_file_size(snapshot.configuration, spec.target_size)
    predicate = [spec.where] if spec.where else []
    return optimize_files(
        spark, target, snapshot, files, size, zorder_by=zorder_by, full=spec.full, predicate=predicate,
        token=spec.token, io=spec.io, started=started,
    )  # fmt: skip


def optimize_files(
    spark: SparkSession,
    target: DeltaTable,
    snapshot: Snapshot,
    files: list[AddFile],
    size: int,
    *,
    zorder_by: Sequence[str] = (),
    full: bool = False,
    predicate: Sequence[str] = (),
    auto: bool = False,
    token: str | None = None,
    io: str = "auto",
    started: float | None = None,
) -> CommandResult:
    """OPTIMIZE the candidate ``files`` of ``snapshot`` into files of about
    ``size`` bytes, recording ``predicate`` (the partitions chosen) and
    ``auto`` (an auto compaction: :mod:`.auto_compact`) as delta-spark does."""
    from airflow_delta_provider.spark.read.scan import scan
    from airflow_delta_provider.spark.write.files import WrittenFiles, write_files

    started = time.monotonic() if started is None else started
    table = target.uri
    zorder_by = list(zorder_by)
    cluster_by = [".".join(c) for c in clustering.clustering_columns(snapshot)]
    if cluster_by:  # one bin (one ZCube) of the files to cluster: a clustered table has no partitions
        given = spark.conf.get(MIN_CUBE_SIZE_CONF, None)
        min_cube = int(given) if given else clustering.DEFAULT_MIN_CUBE_SIZE
        chosen = clustering.files_to_cluster(files, cluster_by, full=full, min_cube_size=min_cube)
        bins = plan_bins(chosen, size, zorder=True)
    else:
        bins = plan_bins(files, size, zorder=bool(zorder_by))
    parameters: dict[str, Any] = {
        "predicate": json.dumps(list(predicate)),
        "zOrderBy": json.dumps(zorder_by),
        "clusterBy": json.dumps(cluster_by),
        "auto": auto,
    }  # delta-spark's OPTIMIZE parameters
    if cluster_by:
        parameters["isFull"] = full
    if not bins:
        return CommandResult(table, OPERATION, None, _metrics([], [], len(files), started))
    txn = target.transaction(OPERATION, parameters=parameters, snapshot=snapshot)
    removed = [f for b in bins for f in b.files]
    txn.read_files(removed)
    mode = resolve_io(spark, target.storage.location, io)

    planning = threading.Lock()  # scan() sets a session setting for its own read: one thread at a time
    from airflow_delta_provider.spark.read.row_tracking import materialized, tracked_rows

    tracking = materialized(snapshot)  # rows keep their stable ids and versions in the new files
    hidden = tracking.names if tracking is not None else ()

    def rewrite(one: Bin) -> list[AddFile]:
        with planning:
            if tracking is None:
                frame = scan(spark, snapshot, one.files, io=mode)
            else:
                frame = tracked_rows(spark, snapshot, one.files, mode)[0]
        if zorder_by or cluster_by:
            from airflow_delta_provider.spark.write.hilbert import with_hilbert_key
            from airflow_delta_provider.spark.write.zorder import with_zorder_key

            key, noise = "__delta_zorder_key", "__delta_zorder_noise"
            count = max(1, math.ceil(one.size / size))
            if cluster_by:
                frame = with_hilbert_key(frame, _top_level(snapshot, cluster_by), key)
            else:
                frame = with_zorder_key(frame, zorder_by, key)
            frame = frame.withColumn(noise, F.rand(seed=0))
            # The noise splits rows of one key (duplicates, nulls) over files, as delta-spark's addNoise.
            frame = frame.repartitionByRange(count, F.col(key), F.col(noise))
            ordering = [
                *[F.col(quote_identifier(c)) for c in snapshot.partition_columns],
                F.col(key),
            ]  # partitions first
            frame = frame.sortWithinPartitions(*ordering).drop(key, noise)
        else:
            frame = frame.coalesce(1)
        written = write_files(
            frame, snapshot, snapshot.schema, snapshot.partition_columns, io=mode, hidden_columns=hidden
        )
        if cluster_by:
            cube = str(uuid.uuid4())  # one ZCube per bin, as delta-spark's ZCubeInfo
            written = [clustering.clustered_file(a, cluster_by, cube) for a in written]
        return written

    forward_store_env(spark)  # once, before the threads: later calls then change nothing
    adds: list[AddFile] = []
    with WrittenFiles(target, adds) as written:
        failures: list[Exception] = []
        with ThreadPoolExecutor(min(len(bins), MAX_CONCURRENT_BINS)) as pool:
            futures = [pool.submit(rewrite, b) for b in bins]
            for future in futures:
                try:  # every bin's files are kept track of, so a failure removes them all
                    adds.extend(replace(a, data_change=False) for a in future.result())
                except Exception as exc:
                    failures.append(exc)
                    for rest in futures:  # bins not started yet: no point in writing them
                        rest.cancel()
        if failures:
            raise failures[0]
        check_rows_kept(OPERATION, removed, adds)
        now = int(time.time() * 1000)
        txn.add_all([*adds, *(f.remove(now, data_change=False) for f in removed)])
        metrics = _metrics(adds, removed, len(files), started)
        written.committing()
        commit = txn.commit(metrics=metrics.commit_metrics(), token=token)
    return CommandResult(table, OPERATION, commit.version, metrics)


def _top_level(snapshot: Snapshot, columns: Sequence[str]) -> list[str]:
    """The clustering columns as frame columns: top-level ones only (nested
    clustering columns, which delta-spark allows, are refused)."""
    fields = {f["name"].lower(): f["name"] for f in snapshot.schema.get("fields", ())}
    nested = [c for c in columns if c.lower() not in fields]
    if nested:
        raise InvalidInputError(f"cannot cluster by nested column(s) {nested}: only top-level columns")
    return [fields[c.lower()] for c in columns]


def _check_zorder_columns(snapshot: Snapshot, columns: list[str]) -> list[str]:
    """The Z-order columns as the schema spells them (:func:`check_layout_columns`);
    refused on a clustered table, as delta-spark refuses it."""
    if not columns:
        return []
    if clustering.is_clustered(snapshot.domain_metadata):
        raise InvalidInputError(
            "cannot Z-order a liquid-clustered table (it has a delta.clustering domain), as delta-spark refuses; "
            "OPTIMIZE it without zorder_by to cluster its files"
        )
    return check_layout_columns(
        snapshot.schema, snapshot.partition_columns, snapshot.configuration, columns, "Z-order by"
    )


def _files_where(spark: SparkSession, snapshot: Snapshot, where: str | None) -> list[AddFile]:
    """The live files of the partitions ``where`` selects (every file without one)."""
    if where is None:
        return snapshot.files
    conditions.parse_condition(spark, snapshot.schema, where)  # resolves and is boolean, or InvalidInputError
    predicate = Predicate.parse(where)
    if not predicate.is_partition_only(snapshot.partition_columns):
        raise InvalidInputError(
            f"OPTIMIZE's where may name partition columns only ({', '.join(snapshot.partition_columns) or 'none'}), "
            f"not {where!r}"
        )
    chosen = partition_filter(
        snapshot.files, predicate, snapshot.schema, snapshot.partition_columns,
        mapping_mode=snapshot.column_mapping.mode,
    )  # fmt: skip
    if chosen is None:
        raise InvalidInputError(f"OPTIMIZE's where {where!r} cannot be decided from partition values alone")
    return chosen


def _metrics(adds: list[AddFile], removed: list[AddFile], considered: int, started: float) -> OptimizeMetrics:
    sizes = file_size_metrics(adds)
    return OptimizeMetrics(
        num_added_files=len(adds),
        num_removed_files=len(removed),
        num_added_bytes=sum(a.size for a in adds),
        num_removed_bytes=sum(f.size for f in removed),
        min_file_size=sizes["minFileSize"],
        p25_file_size=sizes["p25FileSize"],
        p50_file_size=sizes["p50FileSize"],
        p75_file_size=sizes["p75FileSize"],
        max_file_size=sizes["maxFileSize"],
        total_considered_files=considered,
        total_files_skipped=considered - len(removed),
        num_deletion_vectors_removed=sum(f.deletion_vector is not None for f in removed),
        execution_time_ms=int((time.monotonic() - started) * 1000),
    )


__all__ = ["MAX_CONCURRENT_BINS", "MIN_CUBE_SIZE_CONF", "OPERATION", "optimize_files", "run"]
