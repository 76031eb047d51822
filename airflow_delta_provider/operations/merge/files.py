"""The MERGE's file I/O: the target's rows read, data and change files
written, and the frames kept in memory while the MERGE runs.

Each function takes what it reads from (a :class:`~.plan.MergePlan`'s parts)
and returns what it made; none keeps state. Files written are also added to
the :class:`~airflow_delta_provider.spark.write.files.WrittenFiles` ledger
that deletes them if the commit does not land.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile, Metadata
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.dml.copy_on_write import elapsed_ms
from airflow_delta_provider.spark.read.row_tracking import Materialized
from airflow_delta_provider.spark.write.files import WrittenFiles


@dataclass(frozen=True)
class Target:
    """Where the target's rows are read from and written to: the table at the MERGE's snapshot."""

    spark: SparkSession
    table: DeltaTable
    snapshot: Snapshot
    #: The resolved I/O mode (``hadoop`` or ``arrow``).
    io: str
    #: The materialized row tracking columns, when rows keep stable ids.
    tracking: Materialized | None

    def scan(self, files: Sequence[AddFile]) -> DataFrame:
        """The live rows of ``files``, the table's columns."""
        from airflow_delta_provider.spark.read.scan import scan

        return scan(self.spark, self.snapshot, list(files), with_file_path=False, io=self.io)

    def copy_rows(self, files: Sequence[AddFile]) -> DataFrame:
        """The rows of ``files`` a rewrite copies: :meth:`scan`'s columns, plus
        the materialized row tracking columns holding each row's stable id and
        commit version when the table has row tracking enabled."""
        if self.tracking is None:
            return self.scan(files)
        from airflow_delta_provider.spark.read.row_tracking import tracked_rows

        return tracked_rows(self.spark, self.snapshot, list(files), self.io, None)[0]

    def row_count(self, files: Sequence[AddFile]) -> int:
        """Live rows in ``files``: from stats (less the rows deletion vectors
        hide) where present, counting the rest."""
        counts = [f.num_live_records for f in files]
        unknown = [f for f, n in zip(files, counts) if n is None]
        total = sum(n for n in counts if n is not None)
        if unknown:
            total += self.scan(unknown).count()
        return total


@dataclass(frozen=True)
class Written:
    """Files one write made, and how long it took."""

    adds: tuple[AddFile, ...] = ()
    changes: tuple[AddCDCFile, ...] = ()
    ms: int = 0


def write_rows(
    target: Target, frame: DataFrame, schema: dict[str, Any], metadata: Metadata, ledger: WrittenFiles
) -> Written:
    """Write ``frame`` (finished rows of the table after the MERGE, of
    ``schema``) as data files; a row breaking NOT NULL or an invariant fails
    the write. With row tracking enabled the frame carries the materialized
    columns, and the files hold them."""
    from airflow_delta_provider.spark.write.files import write_files

    snap = target.snapshot
    start = time.monotonic()
    adds = write_files(
        frame,
        snap,
        schema,
        snap.partition_columns,
        configuration=dict(metadata.configuration),
        io=target.io,
        hidden_columns=target.tracking.names if target.tracking is not None else (),
        optimized=True,
    )
    ledger.adds.extend(adds)
    return Written(adds=tuple(adds), ms=elapsed_ms(start))


def write_changes(
    target: Target, frame: DataFrame, schema: dict[str, Any], metadata: Metadata, ledger: WrittenFiles
) -> Written:
    """Write ``frame`` (the table's columns and ``_change_type``) as change
    data files, to be committed as ``cdc`` actions, for a commit that leaves
    ``schema`` and ``metadata``."""
    from airflow_delta_provider.delta.partitions import relative_to_root
    from airflow_delta_provider.spark.write.change_data import write_change_files

    start = time.monotonic()
    written = write_change_files(frame, target.snapshot, target.io, schema, metadata)
    paths = []
    for c in written:
        rel = relative_to_root(target.table.root, c.path)
        if rel is None:
            raise InvalidInputError(f"{c.path} lies outside the table root")
        paths.append(rel)
    ledger.other_files.extend(paths)
    return Written(changes=tuple(written), ms=elapsed_ms(start))


class KeptFrames:
    """Frames persisted (memory, then disk) until the MERGE ends: use as
    ``with KeptFrames() as keep:``, and ``keep(frame)`` gives the kept frame."""

    def __init__(self) -> None:
        self._frames: list[DataFrame] = []

    def __call__(self, frame: DataFrame) -> DataFrame:
        from pyspark import StorageLevel

        kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self._frames.append(kept)
        return kept

    def __enter__(self) -> KeptFrames:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for frame in self._frames:
            frame.unpersist()
        self._frames.clear()


__all__ = ["KeptFrames", "Target", "Written", "write_changes", "write_rows"]
