"""What UPDATE and DELETE share: one copy-on-write transaction.

Both follow delta-spark's ``UpdateCommand`` / ``DeleteCommand`` (notes
section 7). The steps are separate methods so that each can be observed (and
a concurrent writer slipped in between them in tests):

1. :meth:`DmlCommand.prepare` opens the snapshot and a transaction (the
   writer-feature gate), checks the input against the schema and
   ``delta.appendOnly``, prunes the live files by partition values and stats,
   and records what was read for conflict checks.
2. :meth:`DmlCommand.rewrite` (per command) finds the touched files and
   writes their replacements.
3. :meth:`DmlCommand.commit` commits ``remove`` + ``add`` in one version.

:meth:`DmlCommand.run` chains them and deletes the files it wrote if any
later step fails, so a failed command leaves no data file behind.

Data files are read and written in the I/O mode ``io`` asks for
(:mod:`~airflow_delta_provider.spark.runtime.io_mode`), resolved once per command.

On a table with row tracking enabled, copied rows keep their stable row ids
and commit versions, written into the materialized columns of the new files
(:mod:`~airflow_delta_provider.spark.read.row_tracking`): :meth:`DmlCommand.copy_rows`
reads them, and :meth:`DmlCommand.write` writes them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile, Metadata
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    InvalidInputError,
)
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.change_data_feed import check_deterministic_values
from airflow_delta_provider.operations.dml.metrics import DmlMetrics
from airflow_delta_provider.spark import conditions
from airflow_delta_provider.spark.runtime.io_mode import resolve_io

if TYPE_CHECKING:
    from airflow_delta_provider.delta.scan.skipping import Predicate
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.transaction.transaction import Transaction
    from airflow_delta_provider.operations.result import CommandResult
    from airflow_delta_provider.spark.read.row_tracking import Materialized

log = logging.getLogger(__name__)

#: About how many change rows go into one change data file.
ROWS_PER_CHANGE_FILE = 2_000_000


def now_ms() -> int:
    return int(time.time() * 1000)


def elapsed_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


@dataclass
class Rewrite:
    """What a command decided to change."""

    removed: list[AddFile] = field(default_factory=list)  # gone whole
    added: list[AddFile] = field(default_factory=list)  # new data files
    #: (the file as it was, the file with its new deletion vector)
    marked: list[tuple[AddFile, AddFile]] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)  # deletion vector and change data files written
    changes: list[AddCDCFile] = field(default_factory=list)  # change data files (``cdc``)
    rows_changed: int = 0  # updated or deleted
    rows_copied: int = 0
    scan_ms: int = 0
    rewrite_ms: int = 0

    @property
    def removes(self) -> list[AddFile]:
        """Every file the commit removes: those gone whole and those re-added with a new vector."""
        return [*self.removed, *(old for old, _new in self.marked)]


class DmlCommand:
    """One UPDATE or DELETE over one table, as one core transaction."""

    operation: str = ""
    #: The command's metrics (:class:`DmlMetrics` with its name for the rows changed).
    metrics_class: ClassVar[type[DmlMetrics]] = DmlMetrics

    def __init__(
        self,
        spark: SparkSession,
        table: str,
        condition: str | None,
        token: str | None,
        io: str = "auto",
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.table_uri = table
        self.condition_sql = condition
        self.token = token
        self.io = io  # checked by the spec; resolved to hadoop or arrow by prepare()
        self.table = DeltaTable(table, storage_options)
        self.snapshot: Snapshot  # set by prepare()
        self.txn: Transaction  # set by prepare()
        self.condition: Column | None = None
        self.predicate: Predicate | None = None  # None = not understood / no condition
        self.candidates: list[AddFile] = []
        self.tracking: Materialized | None = None  # set when rows keep stable ids
        self.result = Rewrite()
        self._started = time.monotonic()

    # --- step 1 --------------------------------------------------------------

    @property
    def parameters(self) -> dict[str, Any]:
        return {"predicate": json.dumps([self.condition_sql] if self.condition_sql is not None else [])}

    def prepare(self) -> None:
        """Snapshot, gate, input checks, pruning and read tracking. Writes nothing.
        The transaction checks conflicts at the table's ``delta.isolationLevel``
        (:func:`~airflow_delta_provider.delta.table_properties.isolation_level`),
        as MERGE's does: at ``WriteSerializable`` a concurrent blind append into
        the data read goes through, at ``Serializable`` it conflicts."""
        snapshot = self.table.snapshot()
        level = table_properties.isolation_level(snapshot.metadata)
        txn = self.table.transaction(
            self.operation, parameters=self.parameters, snapshot=snapshot, isolation_level=level
        )
        self.prepare_in(snapshot, txn)

    def prepare_in(self, snapshot: Snapshot, txn: Transaction) -> None:
        """:meth:`prepare` within a transaction another command opened on
        ``snapshot`` (APPEND's ``replace_where`` removes its rows this way)."""
        self._started = time.monotonic()
        self.io = resolve_io(self.spark, self.table.storage.location, self.io)
        self.snapshot = snapshot
        self.txn = txn
        from airflow_delta_provider.spark.read.row_tracking import materialized

        self.tracking = materialized(self.snapshot)
        schema = self.snapshot.schema
        self.condition = conditions.parse_condition(self.spark, schema, self.condition_sql)
        self.validate(schema)
        if table_properties.append_only(self.snapshot.metadata):
            raise AppendOnlyViolationError(
                f"{self.operation} is not allowed: table {self.table_uri} is append-only (delta.appendOnly=true)"
            )
        self.predicate = self._skipping_predicate()
        self.candidates = self._prune()
        # Conflict tracking (delta-spark filterFiles): the predicate read and
        # the files read. A predicate the skipper does not understand counts
        # as a read of the whole table, the safe side.
        if self.predicate is None:
            self.txn.read_whole_table()
        else:
            self.txn.read_predicate(self.predicate)
        self.txn.read_files(self.candidates)

    def validate(self, schema: dict[str, Any]) -> None:
        """Command-specific input checks (SET expressions for UPDATE)."""

    def _skipping_predicate(self) -> Predicate | None:
        if self.condition_sql is None:
            return None
        from airflow_delta_provider.delta.scan.skipping import Predicate

        try:
            return Predicate.parse(self.condition_sql)
        except InvalidInputError:
            # Spark accepted it (parse_condition ran first); the skipper's
            # dialect did not. Read every file instead of pruning.
            log.info("condition %r is not understood by file skipping; no pruning", self.condition_sql)
            return None

    def _prune(self) -> list[AddFile]:
        from airflow_delta_provider.delta.scan.skipping import prune_files

        snap = self.snapshot
        if self.predicate is None:
            return list(snap.files)
        return prune_files(
            snap.files, self.predicate, snap.schema, snap.partition_columns, mapping_mode=snap.column_mapping.mode
        )

    def whole_files(self) -> list[AddFile] | None:
        """Candidates every row of which matches, decided by partition values
        alone; None when the condition needs the rows (a data predicate)."""
        from airflow_delta_provider.delta.scan.skipping import partition_filter

        snap = self.snapshot
        if self.condition_sql is None:
            return list(self.candidates)
        if self.predicate is None:
            return None
        return partition_filter(
            self.candidates, self.predicate, snap.schema, snap.partition_columns, mapping_mode=snap.column_mapping.mode
        )

    # --- step 2 helpers ---------------------------------------------------------

    @property
    def matched(self) -> Column:
        """The condition with NULL counted as "not matched" (SQL WHERE semantics)."""
        if self.condition is None:
            return F.lit(True)
        return F.coalesce(self.condition, F.lit(False))

    def scan(self, files: list[AddFile], *, with_file_path: bool = False) -> DataFrame:
        from airflow_delta_provider.spark.read.scan import scan

        return scan(self.spark, self.snapshot, files, with_file_path=with_file_path, io=self.io)

    def copy_rows(self, files: list[AddFile], condition: Column | None = None) -> DataFrame:
        """The rows of ``files`` (those matching ``condition``, default all)
        a rewrite copies: :meth:`scan`'s columns, plus the materialized row
        tracking columns holding each row's stable id and commit version when
        the table has row tracking enabled."""
        if self.tracking is None:
            frame = self.scan(files)
            return frame if condition is None else frame.filter(F.coalesce(condition, F.lit(False)))
        from airflow_delta_provider.spark.read.row_tracking import tracked_rows

        return tracked_rows(self.spark, self.snapshot, files, self.io, condition)[0]

    def touched_files(self) -> tuple[list[AddFile], dict[str, int]]:
        """The candidates holding at least one matching row, and how many
        rows match in each (one Spark job reading only the condition's
        columns: filter, then count per file)."""
        from airflow_delta_provider.spark.read.scan import count_matches

        start = time.monotonic()
        if not self.candidates:
            return [], {}
        counts = count_matches(self.spark, self.snapshot, self.candidates, self.condition, io=self.io)
        self.result.scan_ms += elapsed_ms(start)
        return [f for f in self.candidates if f.path in counts], counts

    def row_count(self, files: list[AddFile]) -> int:
        """Live rows in ``files``: from stats (less the rows deletion vectors
        hide) where present, counting the rest."""
        known = [n for f in files if (n := f.num_live_records) is not None]
        unknown = [f for f in files if f.num_live_records is None]
        total = sum(known)
        if unknown:
            total += self.scan(unknown).count()
        return total

    def write(self, frame: DataFrame) -> list[AddFile]:
        """Write ``frame`` as table files; a row breaking NOT NULL or an
        invariant fails the write (``write_files`` guards every column).
        With row tracking enabled the frame carries the materialized columns
        (:meth:`copy_rows`), and the files hold them."""
        from airflow_delta_provider.spark.write.files import write_files

        snap = self.snapshot
        start = time.monotonic()
        try:
            hidden = self.tracking.names if self.tracking is not None else ()
            adds = write_files(
                frame, snap, snap.schema, snap.partition_columns, io=self.io, hidden_columns=hidden, optimized=True
            )
        finally:
            self.result.rewrite_ms += elapsed_ms(start)
        self.result.added.extend(adds)
        return adds

    # --- change data feed ---------------------------------------------------------------

    @property
    def records_changes(self) -> bool:
        """Whether the commit must record its changed rows (``delta.enableChangeDataFeed``)."""
        return table_properties.change_data_feed_enabled(self.snapshot.metadata)

    def check_change_expressions(self, sqls: list[str]) -> None:
        """On a table recording its changes, refuse values the data and the
        change rows could see differently (:func:`~airflow_delta_provider.delta.table_features.change_data_feed.check_deterministic_values`)."""
        if self.records_changes:
            check_deterministic_values(self.table_uri, sqls)

    @staticmethod
    def change_file_count(rows: int) -> int:
        """How many change data files ``rows`` change rows go into: few, not one
        per data file they came from (one per :data:`ROWS_PER_CHANGE_FILE`)."""
        return max(1, -(-rows // ROWS_PER_CHANGE_FILE))

    def write_changes(
        self, frame: DataFrame, schema: dict[str, Any] | None = None, metadata: Metadata | None = None
    ) -> None:
        """Write ``frame`` (the table's columns and ``_change_type``) as change
        data files, to be committed as ``cdc`` actions. ``schema`` and
        ``metadata``: those the commit leaves (default: the snapshot's)."""
        from airflow_delta_provider.spark.write.change_data import write_change_files

        snap = self.snapshot
        start = time.monotonic()
        try:
            written = write_change_files(frame, snap, self.io, schema or snap.schema, metadata or snap.metadata)
        finally:
            self.result.rewrite_ms += elapsed_ms(start)
        self.result.changes.extend(written)
        self.result.other_files.extend(self._relative(c.path) for c in written)

    def _relative(self, path: str) -> str:
        from airflow_delta_provider.delta.partitions import relative_to_root

        rel = relative_to_root(self.table.root, path)
        if rel is None:
            raise InvalidInputError(f"{path} lies outside the table root")
        return rel

    # --- deletion vectors (merge-on-read) -------------------------------------------

    @property
    def writes_deletion_vectors(self) -> bool:
        """Whether this command marks rows in deletion vectors instead of
        rewriting files: the table enables them (``delta.enableDeletionVectors``)
        and its protocol has the feature."""
        snap = self.snapshot
        return table_properties.deletion_vectors_enabled(snap.metadata) and "deletionVectors" in (
            snap.protocol.writer_features or ()
        )

    def matching_rows(self) -> dict[str, Any]:
        """Per candidate file (``add.path``), the row indexes of its live rows that match."""
        from airflow_delta_provider.spark.read.file_reads import matching_row_indexes

        start = time.monotonic()
        try:
            return matching_row_indexes(self.spark, self.snapshot, self.candidates, self.condition, self.io)
        finally:
            self.result.scan_ms += elapsed_ms(start)

    def mark_deleted(self, matches: dict[str, Any]) -> None:
        """Put each file's matching rows in a new deletion vector (the union
        with its old one), all of them in one ``deletion_vector_<uuid>.bin``
        written now; a file none of whose rows stays is removed whole."""
        from pyroaring import BitMap64

        from airflow_delta_provider.delta.actions.deletion_vectors import DeletionVectorFile

        start = time.monotonic()
        by_path = {f.path: f for f in self.candidates}
        vectors = DeletionVectorFile()
        for path, rows in matches.items():
            f = by_path[path]
            bitmap = BitMap64(rows)
            old = self.snapshot.deleted_rows(f)
            if old is not None:
                bitmap |= old
            # A file with a vector must carry numRecords; one without stats gets it from its footer.
            physical = f.num_records if f.num_records is not None else self._footer_rows(f)
            if len(bitmap) >= physical:
                self.result.removed.append(f)
            else:
                self.result.marked.append((f, f.with_deletion_vector(vectors.add(bitmap), physical)))
        if len(vectors):
            self.result.other_files.append(vectors.path)
            self.table.storage.put(vectors.path, vectors.data())
        self.result.rewrite_ms += elapsed_ms(start)

    def _footer_rows(self, f: AddFile) -> int:
        """The rows of a data file, from its parquet footer."""
        import pyarrow.parquet as pq

        from airflow_delta_provider.delta.partitions import file_storage

        storage, rel = file_storage(self.table.storage, f.path)
        with storage.open_input_file(rel) as fh:
            return pq.ParquetFile(fh).metadata.num_rows

    # --- step 2 and 3 -------------------------------------------------------------

    def rewrite(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def metrics(self) -> DmlMetrics:
        """delta-spark's metrics of what :attr:`result` holds (:class:`DmlMetrics`)."""
        r = self.result
        return self.metrics_class(
            num_changed_rows=r.rows_changed,
            num_added_files=len(r.added),
            num_removed_files=len(r.removed),
            num_copied_rows=r.rows_copied,
            num_added_change_files=len(r.changes),
            num_added_bytes=sum(f.size for f in r.added),
            num_removed_bytes=sum(f.size for f in r.removed),
            num_deletion_vectors_added=len(r.marked),
            num_deletion_vectors_removed=sum(f.deletion_vector is not None for f in r.removes),
            num_deletion_vectors_updated=sum(old.deletion_vector is not None for old, _new in r.marked),
            execution_time_ms=elapsed_ms(self._started),
            scan_time_ms=r.scan_ms,
            rewrite_time_ms=r.rewrite_ms,
        )

    def commit(self) -> CommandResult:
        """Commit the rewrite; with nothing removed, commit nothing (version None)."""
        from airflow_delta_provider.operations.result import CommandResult

        metrics = self.metrics()
        if not self.result.removes:
            return CommandResult(self.table_uri, self.operation, None, metrics)
        ts = now_ms()
        remarked = [new for _old, new in self.result.marked]
        self.txn.add_all([*self.result.added, *remarked, *(f.remove(ts) for f in self.result.removes)])
        self.txn.add_all(self.result.changes)
        metrics = self.metrics()  # executionTimeMs up to the commit
        commit = self.txn.commit(metrics=metrics.commit_metrics(), token=self.token)
        return CommandResult(self.table_uri, self.operation, commit.version, metrics)

    def abort(self) -> None:
        """Delete the files this command wrote (they were never committed)."""
        if self.result.added:
            from airflow_delta_provider.spark.write.files import delete_written_files

            delete_written_files(self.table.storage, self.result.added)
            self.result.added = []
        if self.result.other_files:
            self.table.storage.delete_many(self.result.other_files)
            self.result.other_files = []
            self.result.changes = []

    def run(self) -> CommandResult:
        """prepare, rewrite, commit; on failure delete what was written, but
        only when the commit surely did not land (see :class:`WrittenFiles`).
        Then the table's auto compaction, if it asks for one (:mod:`.auto_compact`)."""
        from airflow_delta_provider.operations.optimize.auto_compact import after_write
        from airflow_delta_provider.spark.write.files import WrittenFiles

        self.prepare()
        with WrittenFiles(self.table.storage, self.result.added, self.result.other_files) as written:
            self.rewrite()
            written.committing()
            result = self.commit()
        return after_write(self.spark, self.table, result, self.result.added, self.snapshot.configuration, self.io)
