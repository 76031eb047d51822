"""Every exception the provider raises, in one place.

The hierarchy mirrors delta-spark's and delta-rs's: a single root,
``DeltaError``, with protocol, input and concurrency branches, so callers can
catch as broadly or as narrowly as they need. The Spark CLI maps any
``DeltaError`` to exit code 2 and one line on stderr.
"""

from __future__ import annotations


class DeltaError(Exception):
    """Root of every error raised by airflow-delta-provider."""


# --- The table itself --------------------------------------------------------


class TableNotFoundError(DeltaError):
    """The path holds no Delta table (no ``_delta_log`` with a commit)."""


class VersionNotFoundError(DeltaError):
    """A version or timestamp asked for cannot be reconstructed from the log."""


class ChangeDataUnavailableError(VersionNotFoundError):
    """The change data feed cannot give the changes asked for: a version is
    no longer in the log, lies after the latest one, or was committed while
    ``delta.enableChangeDataFeed`` was off."""


class CorruptLogError(DeltaError):
    """The log cannot be replayed: a gap in versions, a missing protocol or
    metadata action, or an unreadable commit or checkpoint."""


class CorruptCheckpointError(CorruptLogError):
    """A checkpoint file cannot be read (torn or damaged). Readers fall back
    to an older checkpoint or to the commits."""


class CorruptSidecarError(CorruptCheckpointError):
    """A sidecar file a V2 checkpoint refers to is missing, unreadable or
    outside ``_delta_log/_sidecars``. The message names the sidecar and its
    checkpoint. Readers fall back to an older checkpoint or to the commits
    when the log still has them."""


class CorruptDeletionVectorError(CorruptLogError):
    """A deletion vector cannot be read: its file is missing, its checksum or
    size does not match, or its bitmap is damaged. The message names the DV
    file (or says it is inline) and the data file it belongs to."""


class UnsupportedFeatureError(DeltaError):
    """The table needs a reader or writer feature this implementation refuses
    to honour only partly. The message names the feature or version."""


class UnsupportedTypeChangeError(UnsupportedFeatureError):
    """The schema records a type change (``delta.typeChanges``) that type
    widening does not allow, so files written before it cannot be read as the
    table's type. The message names the column and both types."""


# --- Storage -----------------------------------------------------------------


class StorageError(DeltaError):
    """A store could not be reached or refused a request (wrong credentials,
    a network failure). The message names the store, never a secret."""


class StorageAccessDeniedError(StorageError):
    """The store refused the credentials (HTTP 401 or 403). Nothing the
    request asked for was done, so a refused commit surely did not land."""


class UnsafeStorageError(UnsupportedFeatureError):
    """The store does not honour an atomic create, so commits are refused."""


class SymlinkManifestUnsupportedError(UnsupportedFeatureError):
    """Symlink format manifests cannot describe the table: it has (or would
    turn on) deletion vectors or column mapping, which the engines that read
    manifests do not apply. The message names the property and the file or
    setting in the way."""


# --- Our own bugs ------------------------------------------------------------


#: What an internal error asks of whoever reads it.
REPORT_REQUEST = (
    "This is a bug of airflow-delta-provider, not a problem with your input or your table: "
    "please report it to the airflow-delta-provider maintainers, with this message, "
    "the operation and its arguments, and the provider's version."
)


class InternalError(DeltaError):
    """The provider failed on work of its own making: SQL the code built did
    not analyse, an invariant of ours did not hold. Never the user's fault,
    never worth a retry with the same input. The message says so and asks for
    a report; a physical column name in it (``col-<uuid>``) is followed by
    its logical name."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} -- {REPORT_REQUEST}")
        self.detail = message


# --- Bad input ---------------------------------------------------------------


class InvalidInputError(DeltaError):
    """An argument is wrong: a condition that does not parse, an unknown
    column, a bad option value."""


class InvalidArgumentError(InvalidInputError, ValueError):
    """An operation's argument is wrong, as its spec's ``validate()`` finds before
    anything runs. A ``ValueError`` too, so that a DAG file that builds an
    operator with it fails when it is parsed, as Airflow's own operators do."""


class SqlSyntaxError(InvalidInputError):
    """User SQL (a condition, a SET expression, ``replace_where``, MERGE's
    ``on``) does not parse. The message names the token at fault and its
    position, as Spark's ``PARSE_SYNTAX_ERROR`` does."""


class UnresolvedColumnError(InvalidInputError):
    """User SQL names a column the table does not have. The message is Spark's
    ``UNRESOLVED_COLUMN.WITH_SUGGESTION``, with the nearest columns."""


class SourceNotFoundError(InvalidInputError):
    """The path an APPEND or MERGE reads its source from does not exist."""


class TableAlreadyExistsError(InvalidInputError):
    """A create (or a CONVERT TO DELTA) was asked for where a table already exists."""


class SchemaMismatchError(InvalidInputError):
    """Data does not fit the table schema. The message shows both schemas."""


class InvariantViolationError(InvalidInputError):
    """A row breaks a NOT NULL column or a ``delta.invariants`` expression."""


class AppendOnlyViolationError(InvalidInputError):
    """A data-changing remove was attempted on a ``delta.appendOnly`` table."""


class MultipleSourceMatchesError(InvalidInputError):
    """MERGE: a target row is matched by more than one source row, and a
    clause would update it (or delete it, among other actions), so the
    result would depend on which match came first. The message names the row."""


class StorageNotFoundError(InvalidInputError, StorageError):
    """The bucket or container a table URI names does not exist."""


class RetentionTooShortError(InvalidInputError):
    """VACUUM was asked for a retention below the table's safe minimum."""


class NegativeRetentionError(InvalidArgumentError, RetentionTooShortError):
    """VACUUM was given a negative retention, as its spec's ``validate()`` finds
    (never allowed, even with the retention check off)."""


class VacuumLiteUnavailableError(InvalidInputError):
    """VACUUM LITE cannot prove every removable file from the log: commits it
    needs (those since the last vacuum, or since version 0 when none is
    recorded) were removed by log cleanup. A full VACUUM lists the table
    instead (delta-spark's ``DELTA_CANNOT_VACUUM_LITE``)."""


class UntrackedDataFilesError(InvalidInputError):
    """A table would be created where data files lie outside any Delta log:
    the new table would not read them, and VACUUM would delete them. The
    message names some of them and the ways out."""


class DataFilesMissingError(InvalidInputError):
    """Files a version needs are gone from the store (deleted by VACUUM or by
    hand), so that version cannot be restored. The message names them."""


# --- The Spark engine --------------------------------------------------------


class EngineUnavailableError(DeltaError):
    """The Spark engine cannot be reached, or went away during the operation
    (a Spark Connect server that is down, stopped or unreachable). Nothing was
    committed unless the log shows the operation's commit."""


class EngineAccessDeniedError(InvalidInputError):
    """The Spark engine refused the connection's credentials (a Spark Connect
    token it does not accept). Retrying with the same connection cannot help."""


class OperationInterruptedError(DeltaError):
    """The operation was interrupted (Airflow's ``on_kill``) before it committed."""


# --- Catalogs (uc://, glue://, hms:// table names) ---------------------------


class CatalogError(DeltaError):
    """A catalog (Unity Catalog, AWS Glue, a Hive Metastore) failed to answer
    about a table name."""


class CatalogUnavailableError(CatalogError):
    """The catalog cannot be reached, or failed on its side (a 5xx, a timeout).
    Nothing was written; a retry may succeed."""


class CatalogTableNotFoundError(CatalogError, TableNotFoundError):
    """The catalog has no table by that name (nor, for a write, the schema or
    database to create it in)."""


class CatalogAccessDeniedError(CatalogError, InvalidInputError):
    """The catalog refused the request: a wrong token, or a grant that does
    not allow it (a write asked with a read-only grant). Nothing was written."""


class NotADeltaTableError(CatalogError, InvalidInputError):
    """The catalog's entry by that name is not a Delta table (a view, a
    Parquet, Iceberg or Hive table), so it is refused."""


# --- Concurrency (delta-spark's ConcurrentModificationException family) ------


class CommitOutcomeUnknownError(DeltaError):
    """A commit's create got no answer and the store could not be read back:
    the version may or may not have landed. Not a CommitFailedError on
    purpose: the files it names must be kept, since they may be committed."""


class CommitFailedError(DeltaError):
    """A commit could not be written (too many attempts, storage refusal)."""


class ConcurrentModificationError(CommitFailedError):
    """A concurrent writer committed something that conflicts with this
    transaction. Subclasses name delta-spark's specific conflicts."""

    def __init__(self, message: str, winning_version: int | None = None) -> None:
        super().__init__(message)
        self.winning_version = winning_version


class ConcurrentAppendError(ConcurrentModificationError):
    """Files were added to data this transaction read."""


class ConcurrentDeleteReadError(ConcurrentModificationError):
    """A file this transaction read was removed by another writer."""


class ConcurrentDeleteDeleteError(ConcurrentModificationError):
    """A file this transaction removes was removed by another writer too."""


class MetadataChangedError(ConcurrentModificationError):
    """The table's metadata changed since this transaction read it."""


class IdentityHighWaterMarkConflictError(MetadataChangedError):
    """A write that generated identity values lost the race for the
    high-water mark to a concurrent metadata change: its values may repeat
    the winner's, so it must run again from the new snapshot."""


class ProtocolChangedError(ConcurrentModificationError):
    """The table's protocol changed since this transaction read it."""


class ConcurrentTransactionError(ConcurrentModificationError):
    """Another writer committed the same ``txn`` appId or metadata domain."""


class VersionRangeConflictError(DeltaError):
    """A consumer of a table's versions recorded a range that does not start
    just after the last version it had recorded: two of its runs processed
    the same versions (runs not serialised, e.g. ``max_active_runs`` above 1)."""


def one_line(error: BaseException | str) -> str:
    """An error's whole text on one line, for the CLIs' one-line errors and a task's error: its
    lines joined with `` | ``, list bullets (``- ``) dropped, as a multi-line message (a schema
    mismatch: a header naming the columns, then one line each) would read aloud."""
    text = error if isinstance(error, str) else str(error)
    lines = [line.strip().removeprefix("- ") for line in text.splitlines() if line.strip()]
    return " | ".join(lines)


def first_line(error: BaseException | str) -> str:
    """The first non-blank line of an error's text (or of ``error`` itself),
    for one-line messages: Spark's errors carry a stack or a plan after it.
    An error with no text gives its type's name."""
    text = error if isinstance(error, str) else str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines:
        return lines[0]
    return "" if isinstance(error, str) else type(error).__name__
