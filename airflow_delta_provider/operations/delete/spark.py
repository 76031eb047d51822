"""DELETE: drop whole files where possible, rewrite the rest, as delta-spark does.

delta-spark's ``DeleteCommand``:

- no condition: every live file is removed, nothing is written;
- a condition on partition columns only, decided by partition values: the
  matching files are removed whole, without reading them;
- a data condition: a scan of the pruned candidates finds the touched files
  (counting the matching rows per file in the same job), and each is
  rewritten keeping the rows where ``NOT coalesce(cond, false)``.

``numDeletedRows`` comes from the files' ``numRecords`` stats where a file
goes whole, and from the touched-file scan otherwise.

On a table with ``delta.enableChangeDataFeed``, a data condition writes
the deleted rows to change data files (``cdc`` actions, ``_change_type``
``delete``), as delta-spark does; files removed whole record their rows by
the ``remove`` actions alone, which readers of the feed turn into deletes.

On a table with ``delta.enableDeletionVectors`` (merge-on-read), a data
condition writes no data file: the matching rows' indexes go into a deletion
vector per touched file (the union with its old one), and a file none of
whose rows stays is removed whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.operations.delete.metrics import DeleteMetrics
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.dml.copy_on_write import DmlCommand
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.update.spark import GATHER_CHANGES_ABOVE_FILES


class DeleteCommand(DmlCommand):
    operation = "DELETE"
    metrics_class = DeleteMetrics

    def rewrite(self) -> None:
        whole = self.whole_files()
        if whole is not None:
            self.result.removed = list(whole)
            self.result.rows_changed = self.row_count(whole) if whole else 0
            return
        if self.writes_deletion_vectors:
            matches = self.matching_rows()
            if self.records_changes and matches:
                deleted = sum(len(rows) for rows in matches.values())
                self._write_deleted([f for f in self.candidates if f.path in matches], deleted)
            self.mark_deleted(matches)
            self.result.rows_changed = sum(len(rows) for rows in matches.values())
            return
        touched, counts = self.touched_files()
        if not touched:
            return
        deleted = sum(counts.values())
        total = self.row_count(touched)
        if deleted < total:
            self.write(self.copy_rows(touched, ~self.matched))
        if self.records_changes:
            self._write_deleted(touched, deleted)
        self.result.removed = list(touched)
        self.result.rows_changed = deleted
        self.result.rows_copied = total - deleted

    def _write_deleted(self, files: list[AddFile], deleted: int) -> None:
        """Record the rows of ``files`` that match (``deleted`` of them) as ``delete`` changes."""
        from airflow_delta_provider.delta.table_features.change_data_feed import DELETE
        from airflow_delta_provider.spark.write.change_data import with_change_type

        rows = self.scan(files).filter(self.matched)
        if len(files) > GATHER_CHANGES_ABOVE_FILES:  # few files of changes, not one per file read
            rows = rows.repartition(self.change_file_count(deleted))
        self.write_changes(with_change_type(rows, DELETE))


def run(spark: SparkSession, spec: DeleteSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """DELETE FROM ``spec.table_path`` [WHERE ``spec.condition``]; a CommandResult whose
    metrics are :class:`~.metrics.DeleteMetrics`. Without a condition every row goes.
    ``version``, ``io`` and ``storage_options`` as for :func:`~airflow_delta_provider.operations.update.spark.run`.
    """
    return DeleteCommand(spark, spec.table_path, spec.condition, spec.token, spec.io, storage_options).run()


__all__ = ["DeleteCommand", "run"]
