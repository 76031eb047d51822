"""What an APPEND with ``mode="overwrite"`` removes, in the APPEND's own commit.

Three scopes, as delta-spark's ``WriteIntoDelta`` has them
(:mod:`airflow_delta_provider.operations.append.plan` holds the
rules that need no Spark):

- the whole table (a plain overwrite): every live file goes, and the commit
  read the whole table;
- ``replace_where``: the rows matching the predicate go, by a DELETE inside
  the same transaction (:class:`~.delete.DeleteCommand`: whole files where
  partition values decide, deletion vectors or rewritten files for the rest,
  change rows on a table with the change data feed), and every source row
  must match the predicate;
- dynamic partition overwrite: the files of the partitions the source wrote
  go (the whole table when it has no partitions).

The commit's reads are recorded per scope, so a concurrent write conflicts
only where it touches what was replaced.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession

from airflow_delta_provider.delta.actions.model import AddFile, RemoveFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.operations.append.metrics import AppendMetrics
from airflow_delta_provider.operations.append.plan import (
    check_replace_predicate,
    partitions_predicate,
    replaced_partitions,
)
from airflow_delta_provider.operations.delete.spark import DeleteCommand

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.delta.transaction.transaction import Transaction


class Replacement:
    """The removal half of an overwrite of ``snapshot``, staged in ``txn``.

    Files it writes (rewritten files, deletion vectors, change data) are
    listed in :attr:`written` and :attr:`other_files`, for the caller's
    :class:`~airflow_delta_provider.spark.write.files.WrittenFiles`.
    """

    def __init__(
        self,
        spark: SparkSession,
        target: DeltaTable,
        snapshot: Snapshot,
        txn: Transaction,
        *,
        io: str,
        storage_options: Mapping[str, str] | None,
        replace_where: str | None = None,
        dynamic: bool = False,
    ) -> None:
        self.snapshot = snapshot
        self.txn = txn
        self.replace_where = replace_where
        self.dynamic = dynamic and bool(snapshot.partition_columns)  # unpartitioned: the whole table
        self.removed: list[AddFile] = []
        self._rows: DeleteCommand | None = None
        if replace_where is not None:
            check_replace_predicate(replace_where)
            self._rows = DeleteCommand(spark, target.uri, replace_where, None, io, storage_options)
            self._rows.table = target
        self.written: list[AddFile] = self._rows.result.added if self._rows is not None else []
        self.other_files: list[str] = self._rows.result.other_files if self._rows is not None else []

    # --- before any write -------------------------------------------------------------

    def prepare(self) -> None:
        """With ``replace_where``: check the predicate against the table, prune
        by it, and record its read. Writes nothing."""
        if self._rows is None:
            return
        try:
            self._rows.prepare_in(self.snapshot, self.txn)
        except InvalidInputError as exc:
            raise InvalidInputError(f"replace_where: {exc}") from None

    @property
    def _message(self) -> str:
        return (
            f"a source row does not match replace_where {self.replace_where!r}, so it would land outside the "
            "rows it replaces; every row written must match it. The row's values: "
        )

    @property
    def row_checks(self) -> dict[str, str]:
        """What every source row must meet, for the write job to check
        (delta-spark's ``DELTA_REPLACE_WHERE_MISMATCH``): the predicate, unless
        partition values decide it (:meth:`check_written` does, with no job)."""
        if self._rows is None or self._partition_only:
            return {}
        return {self._message: self.replace_where or ""}

    @property
    def _partition_only(self) -> bool:
        predicate = self._rows.predicate if self._rows is not None else None
        return predicate is not None and predicate.is_partition_only(self.snapshot.partition_columns)

    def check_written(self, new_files: list[AddFile]) -> None:
        """A partition-only ``replace_where``: every new file's partition must match it."""
        if self._rows is None or not self._partition_only:
            return
        from airflow_delta_provider.delta.scan.skipping import partition_filter

        assert self._rows.predicate is not None
        snap = self.snapshot
        matching = partition_filter(
            new_files, self._rows.predicate, snap.schema, snap.partition_columns, mapping_mode=snap.column_mapping.mode
        )
        if matching is None:  # not decided by partition values after all: read the new rows back
            from pyspark.sql import functions as F

            condition = self._rows.condition
            assert condition is not None
            stray = self._rows.scan(new_files).filter(~F.coalesce(condition, F.lit(False))).limit(1).collect()
            if stray:
                raise InvalidInputError(self._message + ", ".join(f"{k} = {v}" for k, v in stray[0].asDict().items()))
            return
        kept = {f.path for f in matching}
        for f in new_files:
            if f.path not in kept:
                values = ", ".join(f"{k} = {'NULL' if v is None else v}" for k, v in f.partition_values.items())
                raise InvalidInputError(self._message + values)

    # --- after the new files are written -------------------------------------------------

    def remove(self, new_files: list[AddFile], new_rows: DataFrame) -> None:
        """Decide what goes, and write what that needs (rewritten files,
        vectors, change rows). ``new_files`` and ``new_rows``: what the
        APPEND wrote, for a dynamic overwrite's partitions and for the
        change rows of the inserts."""
        from airflow_delta_provider.delta.scan.skipping import Predicate

        if self._rows is not None:
            self._rows.rewrite()
            if self._rows.result.changes:  # the version's feed comes from cdc files alone: inserts too
                from airflow_delta_provider.delta.table_features.change_data_feed import INSERT
                from airflow_delta_provider.spark.write.change_data import with_change_type

                self._rows.write_changes(with_change_type(new_rows, INSERT))
            self.removed = list(self._rows.result.removed)
            return
        if not self.dynamic:
            self.txn.read_whole_table()
            self.removed = list(self.snapshot.files)
            return
        self.removed = replaced_partitions(self.snapshot, new_files)
        predicate = partitions_predicate(self.snapshot, new_files)
        if predicate is not None:
            self.txn.read_predicate(Predicate.parse(predicate))
        self.txn.read_files(self.removed)

    def actions(self) -> list[AddFile | RemoveFile | Any]:
        """The commit's actions for the removal: removes, rewritten and re-marked files, change files."""
        now = int(time.time() * 1000)
        if self._rows is None:
            return [f.remove(now) for f in self.removed]
        result = self._rows.result
        remarked = [new for _old, new in result.marked]
        return [*result.added, *remarked, *(f.remove(now) for f in result.removes), *result.changes]

    def metrics(self, new_files: list[AddFile]) -> AppendMetrics:
        """delta-spark's WRITE metrics of an overwrite: the replace_where ones
        count rewritten files and copied rows as output, as it does."""
        metrics = AppendMetrics.overwritten([*new_files, *self.written], self.removed)
        if self._rows is None:
            return metrics
        result = self._rows.result
        return replace(
            metrics,
            num_copied_rows=result.rows_copied,
            num_deleted_rows=result.rows_changed,
            num_added_change_files=len(result.changes),
            num_deletion_vectors_added=len(result.marked),
        )


__all__ = ["Replacement"]
