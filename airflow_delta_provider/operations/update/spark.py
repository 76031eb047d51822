"""UPDATE: rewrite the files that hold matching rows, as delta-spark does.

delta-spark's ``UpdateCommand`` (notes section 7) in three cases:

- no candidate file after pruning, or no matching row: no write, no commit;
- a condition on partition columns only, decided by partition values: every
  row of every candidate matches, so the candidates are rewritten without a
  scan for touched files (``numCopiedRows`` = 0);
- a data condition: a scan of the pruned candidates finds the touched files
  (and counts the matching rows per file in the same job), and only those are
  rewritten with ``when(cond, new).otherwise(old)``.

SET expressions are cast to their column's type. Updating a partition column
moves the row: the writer partitions the rewritten rows by their new values.
A generated column not SET is recomputed where it reads a SET column, and
every written row is checked against its expression (a SET of a generated
column must agree with it); an identity column cannot be SET (delta-spark's
rules).

On a table with ``delta.enableChangeDataFeed``, each updated row's
``update_preimage`` and ``update_postimage`` go to change data files listed
as ``cdc`` actions, as delta-spark records them.

On a table with ``delta.enableDeletionVectors`` (merge-on-read), a data
condition rewrites only the matching rows: they are written, updated, to new
files, and marked deleted in their old files' deletion vectors
(``numCopiedRows`` = 0). delta-spark's UPDATE does the same.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.table_features.generated_columns import depends_on, generation_expressions
from airflow_delta_provider.delta.table_features.identity_columns import check_not_updated
from airflow_delta_provider.operations.dml.copy_on_write import DmlCommand, elapsed_ms
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.update.metrics import UpdateMetrics
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.spark import conditions
from airflow_delta_provider.spark.read.files import free_name
from airflow_delta_provider.spark.write.generated_columns import fill_generated, generated_over

#: With deletion vectors, about how many updated rows go into one new file.
ROWS_PER_UPDATED_FILE = 2_000_000
#: Above this many touched files, change rows are gathered into few files (a
#: shuffle of the few changed rows); below, each task writes its own.
GATHER_CHANGES_ABOVE_FILES = 16


class UpdateCommand(DmlCommand):
    operation = "UPDATE"
    metrics_class = UpdateMetrics

    def __init__(
        self,
        spark: SparkSession,
        table: str,
        condition: str | None,
        set_exprs: Mapping[str, str],
        token: str | None,
        io: str = "auto",
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(spark, table, condition, token, io, storage_options)
        self.set_exprs = dict(set_exprs)
        self.assignments: dict[str, Column] = {}

    def validate(self, schema: dict[str, Any]) -> None:
        self.assignments = conditions.parse_assignments(self.spark, schema, self.set_exprs)
        check_not_updated(schema, self.assignments)  # delta-spark refuses it too
        self.check_change_expressions(list(self.set_exprs.values()))

    def _recomputed(self) -> list[str]:
        """The generated columns not SET whose expression reads a SET column:
        recomputed from the row's new values, as delta-spark does."""
        return [
            name
            for name, sql in generation_expressions(self.snapshot.schema).items()
            if name not in self.assignments and depends_on(sql, self.assignments)
        ]

    def rewrite(self) -> None:
        whole = self.whole_files()
        if whole is None and self.writes_deletion_vectors:
            self._update_with_deletion_vectors()
            return
        if whole is not None:
            # Partition-only: every row of these files matches.
            self.candidates = whole
            touched, updated = whole, None
        else:
            touched, counts = self.touched_files()
            updated = sum(counts.values())
        if not touched:
            return
        written = self._rewrite_files(touched, updated)
        # The rewrite keeps every row, so the written files' row counts (read
        # from their footers) are the touched files' rows: no stats needed.
        rows = sum(f.num_records or 0 for f in written)
        self.result.removed = list(touched)
        self.result.rows_changed = rows if updated is None else updated
        self.result.rows_copied = rows - self.result.rows_changed

    def _update_with_deletion_vectors(self) -> None:
        """One read of the candidates: the matching rows, with every column
        and their file key and row index, are kept (persisted) for both the
        vectors and the write of their updated versions."""
        from pyspark import StorageLevel

        from airflow_delta_provider.spark.read.deletion_vectors import row_indexes_by_file
        from airflow_delta_provider.spark.read.file_reads import match_frame

        start = time.monotonic()
        hidden = self.tracking.names if self.tracking is not None else ()
        frame, key, row, by_key = match_frame(
            self.spark, self.snapshot, self.candidates, self.condition, self.io, with_data=True, extra_columns=hidden
        )
        if self.tracking is not None:  # the updated rows keep their stable ids
            from airflow_delta_provider.spark.read.row_tracking import with_stable_ids

            frame = with_stable_ids(self.spark, frame, key, row, by_key, self.candidates, self.tracking)
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            matches = row_indexes_by_file(frame, key, row, by_key)
            self.result.scan_ms += elapsed_ms(start)
            if not matches:
                return
            updated = sum(len(rows) for rows in matches.values())
            files = max(1, -(-updated // ROWS_PER_UPDATED_FILE))  # few rows: few files, no shuffle
            self.write(self._updated(frame, only_matching=True).coalesce(files))
            if self.records_changes:
                self._write_images(frame.coalesce(files))
        finally:
            frame.unpersist()
        self.mark_deleted(matches)
        self.result.rows_changed = updated

    def _rewrite_files(self, touched: list[AddFile], updated: int | None) -> list[AddFile]:
        written = self.write(self._updated(self.copy_rows(touched)))
        if self.records_changes:  # a second read of the touched files, keeping the matching rows only
            matching = self.scan(touched).filter(self.matched)
            if updated is not None and len(touched) > GATHER_CHANGES_ABOVE_FILES:
                matching = matching.repartition(self.change_file_count(2 * updated))  # not a file per touched file
            self._write_images(matching)
        return written

    def _tracking(self, updated: Column) -> list[Column]:
        """The materialized row tracking columns of the rewritten rows (none
        without row tracking): ids kept, and versions kept unless ``updated``."""
        if self.tracking is None:
            return []
        from airflow_delta_provider.spark.read.row_tracking import copied

        return copied(self.tracking, updated)

    def _updated(self, frame: DataFrame, only_matching: bool = False) -> DataFrame:
        """``frame`` with the SET columns updated, and the generated columns
        that read them recomputed, where the row matches (with the row
        tracking columns, when the table has them)."""
        columns = [
            *self._updated_columns(only_matching),
            *self._tracking(F.lit(True) if only_matching else self.matched),
        ]
        recomputed = self._recomputed()
        if not recomputed:
            return frame.select(*columns)
        if only_matching:
            return fill_generated(frame.select(*columns), self.snapshot.schema, dict.fromkeys(recomputed))
        flag = free_name("_update_matched", {c.lower() for c in frame.columns})
        out = frame.select(*columns, self.matched.alias(flag))
        return fill_generated(out, self.snapshot.schema, dict.fromkeys(recomputed, F.col(flag))).drop(flag)

    def _write_images(self, matching: DataFrame) -> None:
        """Record the pre- and post-image of each row of ``matching`` (rows being updated)."""
        from airflow_delta_provider.spark.write.change_data import update_images

        self.write_changes(update_images(matching, self.snapshot.schema, self._postimage_columns()))

    def _postimage_columns(self) -> list[Column]:
        """The new values of a matching row, over the old row: the SET
        columns, and the generated columns that read them, computed from the
        SET expressions (:func:`~airflow_delta_provider.spark.write.generated_columns.generated_over`)."""
        columns = self._updated_columns(only_matching=True)
        recomputed = self._recomputed()
        if not recomputed:
            return columns
        schema = self.snapshot.schema
        names = [f["name"] for f in schema["fields"]]
        # parse_assignments keeps the order of set_exprs: the n-th SQL sets the n-th column
        set_sql = dict(zip(self.assignments, self.set_exprs.values()))
        return [
            generated_over(schema, name, set_sql).alias(name) if name in recomputed else col
            for name, col in zip(names, columns)
        ]

    def _updated_columns(self, only_matching: bool = False) -> list[Column]:
        """Every table column, SET where the row matches (``only_matching``:
        the rows are known to match)."""
        matched = self.matched
        lower = {name.lower(): col for name, col in self.assignments.items()}
        columns = []
        for field in self.snapshot.schema["fields"]:
            name = field["name"]
            old = F.col(quote_identifier(name))
            new = lower.get(name.lower())
            if new is None:
                columns.append(old.alias(name))
            else:
                columns.append((new if only_matching else F.when(matched, new).otherwise(old)).alias(name))
        return columns


def run(spark: SparkSession, spec: UpdateSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """UPDATE ``spec.table_path`` SET ``spec.updates`` [WHERE ``spec.condition``]; a CommandResult
    whose metrics are :class:`~.metrics.UpdateMetrics`.

    ``version`` is None when no row matched (nothing is committed). ``spec.io``:
    ``auto``, ``hadoop`` or ``arrow`` (:mod:`~airflow_delta_provider.spark.runtime.io_mode`).
    ``storage_options`` reach the table from this process (default: the environment).
    """
    command = UpdateCommand(
        spark, spec.table_path, spec.condition, dict(spec.updates), spec.token, spec.io, storage_options
    )
    return command.run()


__all__ = ["UpdateCommand", "run"]
