"""Typed Delta log actions and their JSON form.

Each action is a frozen dataclass whose ``to_json()`` gives the dict that goes
under its key in a commit line (``{"add": {...}}``) and whose ``from_json()``
reads one. Fields that are absent stay ``None`` and are not written back, and
unknown fields are ignored on read, as PROTOCOL.md "Protocol Evolution" asks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

EMPTY_SCHEMA_STRING = '{"type":"struct","fields":[]}'


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass(frozen=True)
class DeletionVector:
    """A ``deletionVector`` descriptor (PROTOCOL.md "Deletion Vector Descriptor
    Schema"): where the bitmap of a file's deleted rows lives and how many rows
    it holds. :mod:`airflow_delta_provider.delta.actions.deletion_vectors` reads it."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None
    max_row_index: int | None = None

    @property
    def unique_id(self) -> str:
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> DeletionVector | None:
        if not d or d.get("storageType") is None:
            return None
        return cls(
            storage_type=d["storageType"],
            path_or_inline_dv=d.get("pathOrInlineDv") or "",
            size_in_bytes=d.get("sizeInBytes") or 0,
            cardinality=d.get("cardinality") or 0,
            offset=d.get("offset"),
            max_row_index=d.get("maxRowIndex"),
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "storageType": self.storage_type,
                "pathOrInlineDv": self.path_or_inline_dv,
                "offset": self.offset,
                "sizeInBytes": self.size_in_bytes,
                "cardinality": self.cardinality,
                "maxRowIndex": self.max_row_index,
            }
        )


@dataclass(frozen=True)
class Format:
    provider: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "options": dict(self.options)}


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action: reader and writer versions, and features."""

    KEY: ClassVar[str] = "protocol"
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Protocol:
        rf, wf = d.get("readerFeatures"), d.get("writerFeatures")
        return cls(
            min_reader_version=int(d["minReaderVersion"]),
            min_writer_version=int(d["minWriterVersion"]),
            reader_features=tuple(rf) if rf is not None else None,
            writer_features=tuple(wf) if wf is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "minReaderVersion": self.min_reader_version,
                "minWriterVersion": self.min_writer_version,
                "readerFeatures": list(self.reader_features) if self.reader_features is not None else None,
                "writerFeatures": list(self.writer_features) if self.writer_features is not None else None,
            }
        )


@dataclass(frozen=True)
class Metadata:
    """The ``metaData`` action. Each one replaces the previous one whole."""

    KEY: ClassVar[str] = "metaData"
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict)
    format: Format = field(default_factory=Format)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None

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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Metadata:
        fmt = d.get("format") or {}
        return cls(
            id=d.get("id") or "",
            schema_string=d.get("schemaString") or EMPTY_SCHEMA_STRING,
            partition_columns=tuple(d.get("partitionColumns") or ()),
            configuration={k: v for k, v in (d.get("configuration") or {}).items() if v is not None},
            format=Format(fmt.get("provider") or "parquet", dict(fmt.get("options") or {})),
            name=d.get("name"),
            description=d.get("description"),
            created_time=d.get("createdTime"),
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": self.format.to_json(),
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": dict(self.configuration),
                "createdTime": self.created_time,
            }
        )


@dataclass(slots=True)
class AddFile:
    """The ``add`` action. ``path`` is kept exactly as the log spells it
    (relative and URI-encoded, or absolute)."""

    KEY: ClassVar[str] = "add"
    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    #: The clustering implementation that wrote the file (``liquid``: OPTIMIZE of a clustered table).
    clustering_provider: str | None = None
    stats_parsed: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.path, self.dv_id)

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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AddFile:
        return cls(
            path=d["path"],
            partition_values=dict(d.get("partitionValues") or {}),
            size=int(d.get("size") or 0),
            modification_time=int(d.get("modificationTime") or 0),
            data_change=bool(d.get("dataChange", True)),
            stats=d.get("stats"),
            tags=dict(d["tags"]) if d.get("tags") else None,
            deletion_vector=DeletionVector.from_json(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
            clustering_provider=d.get("clusteringProvider"),
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": dict(self.partition_values),
                "size": self.size,
                "modificationTime": self.modification_time,
                "dataChange": self.data_change,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": self.deletion_vector.to_json() if self.deletion_vector else None,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
                "clusteringProvider": self.clustering_provider,
            }
        )


@dataclass(slots=True)
class RemoveFile:
    """The ``remove`` action (a tombstone)."""

    KEY: ClassVar[str] = "remove"
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @property
    def dv_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.path, self.dv_id)

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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RemoveFile:
        pv = d.get("partitionValues")
        return cls(
            path=d["path"],
            deletion_timestamp=d.get("deletionTimestamp"),
            data_change=bool(d.get("dataChange", True)),
            extended_file_metadata=d.get("extendedFileMetadata"),
            partition_values=dict(pv) if pv is not None else None,
            size=d.get("size"),
            stats=d.get("stats"),
            tags=dict(d["tags"]) if d.get("tags") else None,
            deletion_vector=DeletionVector.from_json(d.get("deletionVector")),
            base_row_id=d.get("baseRowId"),
            default_row_commit_version=d.get("defaultRowCommitVersion"),
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "deletionTimestamp": self.deletion_timestamp,
                "dataChange": self.data_change,
                "extendedFileMetadata": self.extended_file_metadata,
                "partitionValues": self.partition_values,
                "size": self.size,
                "stats": self.stats,
                "tags": self.tags,
                "deletionVector": self.deletion_vector.to_json() if self.deletion_vector else None,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
            }
        )


@dataclass(frozen=True)
class AddCDCFile:
    """The ``cdc`` action: a change data file (PROTOCOL.md "Add CDC File").

    It holds a commit's changed rows with a ``_change_type`` column, under
    ``_change_data/``; it is never part of a snapshot, only of the change
    data feed, and is always ``dataChange: false``."""

    KEY: ClassVar[str] = "cdc"
    path: str
    partition_values: dict[str, str | None]
    size: int
    data_change: bool = False
    tags: dict[str, str] | None = None

    def as_add(self) -> AddFile:
        """This change-data file as an ``add`` a scan can read."""
        return AddFile(
            path=self.path,
            partition_values=dict(self.partition_values),
            size=self.size,
            modification_time=0,
            data_change=False,
        )

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AddCDCFile:
        return cls(
            path=d["path"],
            partition_values=dict(d.get("partitionValues") or {}),
            size=int(d.get("size") or 0),
            data_change=bool(d.get("dataChange", False)),
            tags=dict(d["tags"]) if d.get("tags") else None,
        )

    def to_json(self) -> dict[str, Any]:
        return _drop_none(
            {
                "path": self.path,
                "partitionValues": dict(self.partition_values),
                "size": self.size,
                "dataChange": self.data_change,
                "tags": self.tags,
            }
        )


@dataclass(frozen=True)
class Txn:
    """The ``txn`` action: an application's last committed version."""

    KEY: ClassVar[str] = "txn"
    app_id: str
    version: int
    last_updated: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Txn:
        return cls(app_id=d["appId"], version=int(d["version"]), last_updated=d.get("lastUpdated"))

    def to_json(self) -> dict[str, Any]:
        return _drop_none({"appId": self.app_id, "version": self.version, "lastUpdated": self.last_updated})


@dataclass(frozen=True)
class DomainMetadata:
    KEY: ClassVar[str] = "domainMetadata"
    domain: str
    configuration: str
    removed: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DomainMetadata:
        return cls(domain=d["domain"], configuration=d.get("configuration") or "", removed=bool(d.get("removed")))

    def to_json(self) -> dict[str, Any]:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}


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
