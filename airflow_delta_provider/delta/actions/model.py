"""Typed Delta log actions and their JSON form.

Each action is a frozen dataclass whose ``to_json()`` gives the dict that goes
under its key in a commit line (``{"add": {...}}``) and whose ``from_json()``
reads one. Fields that are absent stay ``None`` and are not written back, and
unknown fields are ignored on read, as PROTOCOL.md "Protocol Evolution" asks.

Every field is defined once, with its Delta name, how its JSON is read and
its checkpoint type (:mod:`.fields`): the JSON codec, the checkpoint rows
(:mod:`.checkpoint_codec`) and log replay all follow these definitions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import pyarrow as pa

from airflow_delta_provider.delta.actions.fields import (
    Checkpoint,
    LogField,
    LogRecord,
    dict_if_any,
    dict_or_empty,
    dict_or_none,
    int_or_zero,
    log,
    or_empty_string,
    or_zero,
    tuple_or_empty,
    tuple_or_none,
    without_null_values,
)

EMPTY_SCHEMA_STRING = '{"type":"struct","fields":[]}'


_STR_MAP = pa.map_(pa.string(), pa.string())
_STR_LIST = pa.list_(pa.string())


def _or_empty_schema(v: Any) -> str:
    return v or EMPTY_SCHEMA_STRING


def _or_parquet(v: Any) -> str:
    return v or "parquet"


@dataclass(frozen=True)
class DeletionVector(LogRecord):
    """A ``deletionVector`` descriptor (PROTOCOL.md "Deletion Vector Descriptor
    Schema"): where the bitmap of a file's deleted rows lives and how many rows
    it holds. :mod:`airflow_delta_provider.delta.actions.deletion_vectors` reads it."""

    storage_type: str = field(metadata=log("storageType", pa.string()))
    path_or_inline_dv: str = field(metadata=log("pathOrInlineDv", pa.string(), decode=or_empty_string))
    offset: int | None = field(default=None, kw_only=True, metadata=log("offset", pa.int32()))
    size_in_bytes: int = field(metadata=log("sizeInBytes", pa.int32(), decode=or_zero))
    cardinality: int = field(metadata=log("cardinality", pa.int64(), decode=or_zero))
    max_row_index: int | None = field(default=None, kw_only=True, metadata=log("maxRowIndex", pa.int64()))

    @property
    def unique_id(self) -> str:
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> DeletionVector | None:  # type: ignore[override]
        """The descriptor, or ``None`` for a null one or one without a storage type."""
        dv = super().from_json(d) if d else None
        return dv if dv is not None and dv.storage_type is not None else None


@dataclass(frozen=True)
class Format(LogRecord):
    """The ``format`` of a table's data files (always parquet)."""

    provider: str = field(default="parquet", metadata=log("provider", pa.string(), decode=_or_parquet))
    options: dict[str, str] = field(default_factory=dict, metadata=log("options", _STR_MAP, decode=dict_or_empty))


@dataclass(frozen=True)
class Protocol(LogRecord):
    """The ``protocol`` action: reader and writer versions, and features."""

    KEY: ClassVar[str] = "protocol"
    min_reader_version: int = field(metadata=log("minReaderVersion", pa.int32(), decode=int, required=True))
    min_writer_version: int = field(metadata=log("minWriterVersion", pa.int32(), decode=int, required=True))
    reader_features: tuple[str, ...] | None = field(
        default=None, metadata=log("readerFeatures", _STR_LIST, decode=tuple_or_none)
    )
    writer_features: tuple[str, ...] | None = field(
        default=None, metadata=log("writerFeatures", _STR_LIST, decode=tuple_or_none)
    )


@dataclass(frozen=True)
class Metadata(LogRecord):
    """The ``metaData`` action. Each one replaces the previous one whole."""

    KEY: ClassVar[str] = "metaData"
    # JSON order; the fields before ``schema_string`` in it are keyword-only,
    # so the positional constructor stays (id, schema_string, partition_columns, configuration).
    id: str = field(metadata=log("id", pa.string(), decode=or_empty_string))
    name: str | None = field(default=None, kw_only=True, metadata=log("name", pa.string()))
    description: str | None = field(default=None, kw_only=True, metadata=log("description", pa.string()))
    format: Format = field(default_factory=Format, kw_only=True, metadata=log("format", record=Format))
    schema_string: str = field(metadata=log("schemaString", pa.string(), decode=_or_empty_schema))
    partition_columns: tuple[str, ...] = field(
        default=(), metadata=log("partitionColumns", _STR_LIST, decode=tuple_or_empty)
    )
    configuration: dict[str, str] = field(
        default_factory=dict, metadata=log("configuration", _STR_MAP, decode=without_null_values)
    )
    created_time: int | None = field(default=None, kw_only=True, metadata=log("createdTime", pa.int64()))

    @classmethod
    def new(
        cls,
        schema_string: str,
        partition_columns: Iterable[str] = (),
        configuration: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        created_time: int,
    ) -> Metadata:
        return cls(
            id=str(uuid.uuid4()),
            schema_string=schema_string,
            partition_columns=tuple(partition_columns),
            configuration=dict(configuration or {}),
            name=name,
            description=description,
            created_time=created_time,
        )

    @property
    def schema_json(self) -> dict[str, Any]:
        return json.loads(self.schema_string)


# The fields the file actions (add, remove, cdc) share, each spelled once.
_PATH = log("path", pa.string(), required=True)
_DELETION_VECTOR = log("deletionVector", record=DeletionVector)
_BASE_ROW_ID = log("baseRowId", pa.int64())
_DEFAULT_ROW_COMMIT_VERSION = log("defaultRowCommitVersion", pa.int64())


def _partition_values(decode: Callable[[Any], Any]) -> dict[str, LogField]:
    return log("partitionValues", _STR_MAP, decode=decode)


def _size(decode: Callable[[Any], Any] | None = None) -> dict[str, LogField]:
    return log("size", pa.int64(), decode=decode)


def _data_change(absent: bool) -> dict[str, LogField]:
    """``dataChange``: when absent, true for add and remove, false for cdc."""
    return log("dataChange", pa.bool_(), decode=bool, absent=absent)


def _stats(checkpoint: Checkpoint) -> dict[str, LogField]:
    return log("stats", pa.string(), checkpoint=checkpoint)


def _tags(checkpoint: Checkpoint | None = None) -> dict[str, LogField]:
    return log("tags", _STR_MAP, decode=dict_if_any, checkpoint=checkpoint)


class _FileAction(LogRecord):
    """What ``add`` and ``remove`` share: the key replay reconciles them by."""

    __slots__ = ()
    path: str
    deletion_vector: DeletionVector | None

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.path, self.dv_id)


@dataclass(slots=True)
class AddFile(_FileAction):
    """The ``add`` action. ``path`` is kept exactly as the log spells it
    (relative and URI-encoded, or absolute)."""

    KEY: ClassVar[str] = "add"
    path: str = field(metadata=_PATH)
    partition_values: dict[str, str | None] = field(metadata=_partition_values(dict_or_empty))
    size: int = field(metadata=_size(int_or_zero))
    modification_time: int = field(metadata=log("modificationTime", pa.int64(), decode=int_or_zero))
    data_change: bool = field(default=True, metadata=_data_change(absent=True))
    #: JSON text; a checkpoint writes it after every other column, as delta-spark does.
    stats: str | None = field(default=None, metadata=_stats(Checkpoint.LAST))
    tags: dict[str, str] | None = field(default=None, metadata=_tags())
    deletion_vector: DeletionVector | None = field(default=None, metadata=_DELETION_VECTOR)
    base_row_id: int | None = field(default=None, metadata=_BASE_ROW_ID)
    default_row_commit_version: int | None = field(default=None, metadata=_DEFAULT_ROW_COMMIT_VERSION)
    #: The clustering implementation that wrote the file (``liquid``: OPTIMIZE of a clustered table).
    clustering_provider: str | None = field(default=None, metadata=log("clusteringProvider", pa.string()))
    #: A checkpoint's struct stats (not a JSON field: replay fills it in).
    stats_parsed: dict[str, Any] | None = field(default=None, compare=False)

    def stats_json(self) -> str | None:
        """``stats`` as JSON text, also for a file a checkpoint held with struct stats only."""
        if self.stats is not None:
            return self.stats
        if self.stats_parsed is not None:
            return json.dumps(self.stats_parsed, separators=(",", ":"))
        return None

    def parsed_stats(self) -> dict[str, Any] | None:
        """Stats as a dict, from ``stats`` JSON or a checkpoint's ``stats_parsed``."""
        if self.stats_parsed is not None:
            return self.stats_parsed
        if self.stats:
            try:
                return json.loads(self.stats)
            except ValueError:
                return None
        return None

    @property
    def num_records(self) -> int | None:
        """Rows in the data file (``numRecords`` stats), deleted ones included."""
        s = self.parsed_stats()
        n = s.get("numRecords") if s else None
        return int(n) if n is not None else None

    @property
    def num_deleted_records(self) -> int:
        """Rows the file's deletion vector hides (0 without one)."""
        return self.deletion_vector.cardinality if self.deletion_vector else 0

    @property
    def num_live_records(self) -> int | None:
        """Rows of the file the table holds: ``numRecords`` minus the DV's cardinality."""
        n = self.num_records
        return n - self.num_deleted_records if n is not None else None

    def with_deletion_vector(self, dv: DeletionVector, num_records: int | None = None) -> AddFile:
        """This file with ``dv`` (a new vector, the old one's rows included),
        as delta-spark re-adds it: a data change, and stats marked no longer
        tight (``tightBounds: false``: the bounds may cover deleted rows;
        ``numRecords`` stays the physical count, taken from ``num_records``
        when the file had no stats: the protocol wants it with a vector)."""
        stats = self.parsed_stats() or {}
        if "numRecords" not in stats and num_records is not None:
            stats = {"numRecords": num_records, **stats}
        text = json.dumps({**stats, "tightBounds": False}, separators=(",", ":")) if stats else None
        return replace(self, data_change=True, deletion_vector=dv, stats=text, stats_parsed=None)

    def remove(self, deletion_timestamp: int, data_change: bool = True) -> RemoveFile:
        """The tombstone delta-spark writes for this file (``removeWithTimestamp``)."""
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=dict(self.partition_values),
            size=self.size,
            stats=self.stats,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
        )


@dataclass(slots=True)
class RemoveFile(_FileAction):
    """The ``remove`` action (a tombstone)."""

    KEY: ClassVar[str] = "remove"
    path: str = field(metadata=_PATH)
    deletion_timestamp: int | None = field(default=None, metadata=log("deletionTimestamp", pa.int64()))
    data_change: bool = field(default=True, metadata=_data_change(absent=True))
    extended_file_metadata: bool | None = field(default=None, metadata=log("extendedFileMetadata", pa.bool_()))
    partition_values: dict[str, str | None] | None = field(default=None, metadata=_partition_values(dict_or_none))
    size: int | None = field(default=None, metadata=_size())
    # A checkpoint's tombstones hold neither stats nor tags (tags are still read when there).
    stats: str | None = field(default=None, metadata=_stats(Checkpoint.NONE))
    tags: dict[str, str] | None = field(default=None, metadata=_tags(Checkpoint.READ))
    deletion_vector: DeletionVector | None = field(default=None, metadata=_DELETION_VECTOR)
    base_row_id: int | None = field(default=None, metadata=_BASE_ROW_ID)
    default_row_commit_version: int | None = field(default=None, metadata=_DEFAULT_ROW_COMMIT_VERSION)

    def as_add(self) -> AddFile:
        """The ``add`` this tombstone removed, as far as it records it (partition
        values, stats, deletion vector), for readers of the removed rows."""
        return AddFile(
            path=self.path,
            partition_values=dict(self.partition_values or {}),
            size=self.size or 0,
            modification_time=0,
            data_change=self.data_change,
            stats=self.stats,
            deletion_vector=self.deletion_vector,
        )


@dataclass(frozen=True)
class AddCDCFile(LogRecord):
    """The ``cdc`` action: a change data file (PROTOCOL.md "Add CDC File").

    It holds a commit's changed rows with a ``_change_type`` column, under
    ``_change_data/``; it is never part of a snapshot, only of the change
    data feed, and is always ``dataChange: false``."""

    KEY: ClassVar[str] = "cdc"
    path: str = field(metadata=_PATH)
    partition_values: dict[str, str | None] = field(metadata=_partition_values(dict_or_empty))
    size: int = field(metadata=_size(int_or_zero))
    data_change: bool = field(default=False, metadata=_data_change(absent=False))
    tags: dict[str, str] | None = field(default=None, metadata=_tags())

    def as_add(self) -> AddFile:
        """This change-data file as an ``add`` a scan can read."""
        return AddFile(
            path=self.path,
            partition_values=dict(self.partition_values),
            size=self.size,
            modification_time=0,
            data_change=False,
        )


@dataclass(frozen=True)
class Txn(LogRecord):
    """The ``txn`` action: an application's last committed version."""

    KEY: ClassVar[str] = "txn"
    app_id: str = field(metadata=log("appId", pa.string(), required=True))
    version: int = field(metadata=log("version", pa.int64(), decode=int, required=True))
    last_updated: int | None = field(default=None, metadata=log("lastUpdated", pa.int64()))


@dataclass(frozen=True)
class DomainMetadata(LogRecord):
    """The ``domainMetadata`` action: one domain's configuration, or its removal."""

    KEY: ClassVar[str] = "domainMetadata"
    domain: str = field(metadata=log("domain", pa.string(), required=True))
    configuration: str = field(metadata=log("configuration", pa.string(), decode=or_empty_string))
    removed: bool = field(default=False, metadata=log("removed", pa.bool_(), decode=bool))


@dataclass(frozen=True)
class CommitInfo:
    """The ``commitInfo`` action. Its content is free-form for readers, so the
    raw dict is kept whole; writers build it with :func:`commit_info`."""

    KEY: ClassVar[str] = "commitInfo"
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CommitInfo:
        return cls(raw=dict(d))

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)

    @property
    def operation(self) -> str | None:
        return self.raw.get("operation")

    @property
    def timestamp(self) -> int | None:
        return self.raw.get("timestamp")

    @property
    def txn_id(self) -> str | None:
        return self.raw.get("txnId")

    @property
    def token(self) -> str | None:
        """The caller's operation token (see :data:`TOKEN_TAG`)."""
        tags = self.raw.get("tags") or {}
        return tags.get(TOKEN_TAG) if isinstance(tags, dict) else None


#: commitInfo.tags key under which a caller's operation token is recorded.
TOKEN_TAG = "airflow.operationToken"

Action = Protocol | Metadata | AddFile | RemoveFile | AddCDCFile | Txn | DomainMetadata | CommitInfo

_BY_KEY: dict[str, Any] = {
    c.KEY: c for c in (Protocol, Metadata, AddFile, RemoveFile, AddCDCFile, Txn, DomainMetadata, CommitInfo)
}


def action_from_json(line: Mapping[str, Any]) -> Action | None:
    """Parse one commit line (``{"add": {...}}``); unknown actions give None."""
    for key, body in line.items():
        cls = _BY_KEY.get(key)
        if cls is not None and body is not None:
            return cls.from_json(body)
    return None


def action_to_json(action: Action) -> dict[str, Any]:
    return {action.KEY: action.to_json()}


def parse_commit(data: bytes | str) -> Iterator[Action]:
    """Actions of one newline-delimited JSON commit file, in order."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    for line in text.splitlines():
        line = line.strip()
        if line:
            action = action_from_json(json.loads(line))
            if action is not None:
                yield action


def serialize_commit(actions: Iterable[Action]) -> bytes:
    """The bytes of a commit file: one compact JSON object per line."""
    return b"".join(
        json.dumps(action_to_json(a), separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        for a in actions
    )


__all__ = [
    "TOKEN_TAG",
    "Action",
    "AddCDCFile",
    "AddFile",
    "CommitInfo",
    "DeletionVector",
    "DomainMetadata",
    "Format",
    "Metadata",
    "Protocol",
    "RemoveFile",
    "Txn",
    "action_from_json",
    "action_to_json",
    "parse_commit",
    "serialize_commit",
]
