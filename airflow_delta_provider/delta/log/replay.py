"""Log replay: reconcile checkpoint and commit actions into table state.

PROTOCOL.md "Action Reconciliation": the last protocol and metadata win, the
last ``txn`` per appId and ``domainMetadata`` per domain win, and data files
are keyed by (path, deletion-vector id), the newest action winning. Paths are
compared canonically (URI-decoded, ``file:`` scheme and table root stripped),
as delta-spark does, so an absolute and a relative spelling of one file match.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from airflow_delta_provider.delta.actions.checkpoint_codec import struct_rows
from airflow_delta_provider.delta.actions.fields import log_name
from airflow_delta_provider.delta.actions.model import (
    Action,
    AddFile,
    DeletionVector,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.partitions import to_absolute
from airflow_delta_provider.delta.storage.location import parse_location

FileKey = tuple[str, "str | None"]

#: The non-file actions a checkpoint holds, each in the column named by its key.
_SMALL_ACTIONS: tuple[type[Protocol | Metadata | Txn | DomainMetadata], ...] = (Protocol, Metadata, Txn, DomainMetadata)

#: The checkpoint columns that hold actions replay applies.
ACTION_COLUMNS = (*(c.KEY for c in _SMALL_ACTIONS), RemoveFile.KEY, AddFile.KEY)

# Column names of the file actions, from their one definition.
_PATH = log_name(AddFile, "path")
_SIZE = log_name(AddFile, "size")
_MODIFICATION_TIME = log_name(AddFile, "modification_time")
_STATS = log_name(AddFile, "stats")
_DELETION_VECTOR = log_name(AddFile, "deletion_vector")
_CARDINALITY = log_name(DeletionVector, "cardinality")
_CLUSTERING_PROVIDER = log_name(AddFile, "clustering_provider")
_PARTITION_VALUES = log_name(AddFile, "partition_values")
#: A checkpoint's struct form of ``stats`` (no JSON action field; read into ``AddFile.stats_parsed``).
_STATS_PARSED = "stats_parsed"


class PathCanonicalizer:
    """Maps every spelling of a data file path to one key: relative to the
    table root when it lies under it (whatever the URI's scheme spelling,
    ``s3a://`` or ``s3://``), else its decoded absolute form (with its
    bucket: a shallow clone may name files in two buckets)."""

    def __init__(self, table_root: str) -> None:
        self._location = parse_location(table_root)
        self._prefix = self._location.uri.rstrip("/") + "/"

    def __call__(self, path: str) -> str:
        if path.startswith("file:") or "://" in path[:16]:
            rel = self._location.relative(path)
            return rel if rel is not None else to_absolute(self._location.uri, path)
        path = unquote(path)
        if path.startswith(self._prefix):
            return path[len(self._prefix) :]
        return path


class LogReplay:
    """Mutable table state that actions are applied to, oldest first.

    The file actions of a checkpoint stay columnar (arrow arrays) and are
    only turned into :class:`AddFile` objects when asked for: loading a
    snapshot of a table with 100,000 files then costs one parquet read. Commit
    actions that follow the checkpoint override its entries by key.
    """

    def __init__(self, table_root: str) -> None:
        self.canonical = PathCanonicalizer(table_root)
        self.protocol: Protocol | None = None
        self.metadata: Metadata | None = None
        self.files: dict[FileKey, AddFile] = {}
        self.tombstones: dict[FileKey, RemoveFile] = {}
        self.txns: dict[str, Txn] = {}
        self.domains: dict[str, DomainMetadata] = {}
        self._checkpoint_adds: list[pa.Array] = []
        self._checkpoint_removes: list[pa.Array] = []

    def apply(self, actions: Iterable[Action]) -> None:
        canonical, files, tombstones = self.canonical, self.files, self.tombstones
        for a in actions:
            if isinstance(a, AddFile):
                key = (canonical(a.path), a.dv_id)
                files[key] = a
                tombstones.pop(key, None)
            elif isinstance(a, RemoveFile):
                key = (canonical(a.path), a.dv_id)
                files.pop(key, None)
                tombstones[key] = a
            elif isinstance(a, Metadata):
                self.metadata = a
            elif isinstance(a, Protocol):
                self.protocol = a
            elif isinstance(a, Txn):
                self.txns[a.app_id] = a
            elif isinstance(a, DomainMetadata):
                if a.removed:
                    self.domains.pop(a.domain, None)
                else:
                    self.domains[a.domain] = a

    def apply_checkpoint_table(self, table: pa.Table) -> None:
        """Apply the rows of one checkpoint file (or sidecar); call it before any commit.

        Columns other than the action columns (``checkpointMetadata``,
        ``sidecar``) are the checkpoint reader's business and are ignored here.
        """
        for cls in _SMALL_ACTIONS:
            if cls.KEY in table.column_names:
                self.apply(_small_actions(cls, table.column(cls.KEY)))
        if AddFile.KEY in table.column_names:
            self._checkpoint_adds.append(_valid_rows(table.column(AddFile.KEY)))
        if RemoveFile.KEY in table.column_names:
            self._checkpoint_removes.append(_valid_rows(table.column(RemoveFile.KEY)))

    def finish(self) -> FileState:
        """The reconciled files: checkpoint rows not overridden by a commit, plus commit state."""
        touched = set(self.files) | set(self.tombstones)
        adds = _drop_touched(self._checkpoint_adds, touched, self.canonical)
        removes = _drop_touched(self._checkpoint_removes, touched, self.canonical)
        return FileState(adds, removes, self.files, self.tombstones)


class FileState:
    """Live files and tombstones: columnar checkpoint rows plus commit actions."""

    def __init__(
        self,
        checkpoint_adds: pa.Array | None,
        checkpoint_removes: pa.Array | None,
        adds: dict[FileKey, AddFile],
        removes: dict[FileKey, RemoveFile],
    ) -> None:
        self._ckpt_adds = checkpoint_adds
        self._ckpt_removes = checkpoint_removes
        self._adds = adds
        self._removes = removes

    @property
    def num_files(self) -> int:
        return (len(self._ckpt_adds) if self._ckpt_adds is not None else 0) + len(self._adds)

    @property
    def size_in_bytes(self) -> int:
        ckpt = 0
        if self._ckpt_adds is not None and len(self._ckpt_adds):
            ckpt = pc.sum(pc.struct_field(self._ckpt_adds, _SIZE)).as_py() or 0
        return ckpt + sum(a.size for a in self._adds.values())

    def sizes(self) -> list[int]:
        """The size of each live file."""
        ckpt = pc.struct_field(self._ckpt_adds, _SIZE).to_pylist() if self._ckpt_adds is not None else []
        return ckpt + [a.size for a in self._adds.values()]

    def deleted_row_counts(self) -> list[int]:
        """The rows each live file's deletion vector hides (0 without one)."""
        ckpt: list[int] = []
        rows = self._ckpt_adds
        if rows is not None and len(rows):
            if rows.type.get_field_index(_DELETION_VECTOR) >= 0:
                dv = pc.struct_field(rows, _DELETION_VECTOR)
                ckpt = pc.fill_null(pc.struct_field(dv, _CARDINALITY), 0).to_pylist()
            else:
                ckpt = [0] * len(rows)
        return ckpt + [a.deletion_vector.cardinality if a.deletion_vector else 0 for a in self._adds.values()]

    def paths(self) -> list[str]:
        """The log paths of the live files, without building :class:`AddFile` s."""
        ckpt = pc.struct_field(self._ckpt_adds, _PATH).to_pylist() if self._ckpt_adds is not None else []
        return ckpt + [a.path for a in self._adds.values()]

    def add_table(self, partition_keys: Sequence[str] = ()) -> pa.Table:
        """The live files as columns, one row per file, without building
        :class:`AddFile` s for the checkpoint's rows: ``path``, ``size``,
        ``modificationTime``, ``numRecords`` (from the stats; null without),
        ``dvCardinality`` (0 without a vector), ``clusteringProvider``, and one
        string column per key of ``partitionValues`` in ``partition_keys``."""
        adds = list(self._adds.values())
        columns: dict[str, list[pa.Array]] = {name: [] for name in (*_ADD_COLUMNS, *partition_keys)}
        rows = self._ckpt_adds
        if rows is not None and len(rows):
            fields = {rows.type.field(i).name for i in range(rows.type.num_fields)}

            def col(name: str, kind: pa.DataType) -> pa.Array:
                return pc.struct_field(rows, name) if name in fields else pa.nulls(len(rows), kind)

            columns[_PATH].append(col(_PATH, pa.string()))
            columns[_SIZE].append(pc.cast(col(_SIZE, pa.int64()), pa.int64()))
            columns[_MODIFICATION_TIME].append(pc.cast(col(_MODIFICATION_TIME, pa.int64()), pa.int64()))
            records = _num_records(col(_STATS, pa.string()))
            if _STATS_PARSED in fields and pc.struct_field(rows, _STATS_PARSED).type.get_field_index("numRecords") >= 0:
                parsed = pc.struct_field(pc.struct_field(rows, _STATS_PARSED), "numRecords")
                records = pc.coalesce(records, pc.cast(parsed, pa.int64()))
            columns["numRecords"].append(records)
            dv = col(_DELETION_VECTOR, pa.struct([(_CARDINALITY, pa.int64())]))
            columns["dvCardinality"].append(pc.cast(pc.fill_null(pc.struct_field(dv, _CARDINALITY), 0), pa.int64()))
            columns[_CLUSTERING_PROVIDER].append(col(_CLUSTERING_PROVIDER, pa.string()))
            values = col(_PARTITION_VALUES, pa.map_(pa.string(), pa.string()))
            for key in partition_keys:
                columns[key].append(pc.map_lookup(values, key, "first"))
        if adds:
            columns[_PATH].append(pa.array([a.path for a in adds], pa.string()))
            columns[_SIZE].append(pa.array([a.size for a in adds], pa.int64()))
            columns[_MODIFICATION_TIME].append(pa.array([a.modification_time for a in adds], pa.int64()))
            columns["numRecords"].append(
                pc.coalesce(
                    _num_records(pa.array([a.stats for a in adds], pa.string())),
                    pa.array([_parsed_records(a) for a in adds], pa.int64()),
                )
            )
            columns["dvCardinality"].append(pa.array([a.num_deleted_records for a in adds], pa.int64()))
            columns[_CLUSTERING_PROVIDER].append(pa.array([a.clustering_provider for a in adds], pa.string()))
            for key in partition_keys:
                columns[key].append(pa.array([a.partition_values.get(key) for a in adds], pa.string()))
        return pa.table(
            {
                name: pa.concat_arrays(parts) if parts else pa.array([], _ADD_TYPES.get(name, pa.string()))
                for name, parts in columns.items()
            }
        )

    def add_files(self) -> list[AddFile]:
        ckpt = _adds(self._ckpt_adds) if self._ckpt_adds is not None else []
        return ckpt + list(self._adds.values())

    def remove_files(self) -> list[RemoveFile]:
        ckpt = _removes(self._ckpt_removes) if self._ckpt_removes is not None else []
        return ckpt + list(self._removes.values())


_ADD_TYPES = {
    _PATH: pa.string(),
    _SIZE: pa.int64(),
    _MODIFICATION_TIME: pa.int64(),
    "numRecords": pa.int64(),
    "dvCardinality": pa.int64(),
    _CLUSTERING_PROVIDER: pa.string(),
}
_ADD_COLUMNS = tuple(_ADD_TYPES)


def _num_records(stats: pa.Array) -> pa.Array:
    """``numRecords`` of each stats JSON text, read with a regex over the whole column (no JSON parse)."""
    found = pc.extract_regex(stats, pattern=r'"numRecords":\s*(?P<n>[0-9]+)')
    return pc.cast(pc.struct_field(found, "n"), pa.int64())


def _parsed_records(add: AddFile) -> int | None:
    """``numRecords`` of a commit's add that has struct stats only."""
    n = add.stats_parsed.get("numRecords") if add.stats is None and add.stats_parsed else None
    return int(n) if n is not None else None


def _valid_rows(column: pa.ChunkedArray) -> pa.Array:
    return column.drop_null().combine_chunks()


def _drop_touched(parts: list[pa.Array], touched: set[FileKey], canonical: PathCanonicalizer) -> pa.Array | None:
    """Checkpoint rows whose key no later commit touched."""
    if not parts:
        return None
    rows = _concat(parts)
    if not touched or not len(rows):
        return rows
    if rows.type.get_field_index(_DELETION_VECTOR) >= 0:
        dv = pc.struct_field(rows, _DELETION_VECTOR)
        has_dv = dv.null_count < len(dv)
    else:
        has_dv = False
    path_column = pc.struct_field(rows, _PATH)
    if not _any_unusual(path_column):
        # Common case: relative, unescaped paths are canonical as they are, so
        # only a row whose path a commit touched can have a touched key.
        hit = pc.fill_null(pc.is_in(path_column, value_set=pa.array([p for p, _ in touched], pa.string())), False)
        if not has_dv and _all_plain(touched):
            return rows.filter(pc.invert(hit))
        candidates = pc.indices_nonzero(hit).to_pylist()
        dvs = pc.struct_field(rows, _DELETION_VECTOR) if has_dv else None
        keys: list[FileKey] = [
            (path_column[i].as_py(), _dv_id(dvs[i].as_py()) if dvs is not None else None) for i in candidates
        ]
        dropped = [i for i, key in zip(candidates, keys) if key in touched]
        if not dropped:
            return rows
        keep = pc.invert(pc.is_in(pa.array(range(len(rows)), pa.int64()), value_set=pa.array(dropped, pa.int64())))
        return rows.filter(keep)
    paths = path_column.to_pylist()
    if has_dv:
        ids = [d.unique_id if d else None for d in map(DeletionVector.from_json, _dv_dicts(rows))]
    else:
        ids = [None] * len(paths)
    keep = [(canonical(p), i) not in touched for p, i in zip(paths, ids)]
    return rows.filter(pa.array(keep, pa.bool_()))


def _dv_id(raw: dict[str, Any] | None) -> str | None:
    dv = DeletionVector.from_json(raw) if raw else None
    return dv.unique_id if dv else None


def _concat(parts: list[pa.Array]) -> pa.Array:
    """One array of the rows of ``parts``: the files of one checkpoint (its
    parts, its sidecars) may order or choose their struct fields differently."""
    parts = [p for p in parts if len(p)] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    try:
        return pa.concat_arrays(parts)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        tables = [pa.table({"rows": p}) for p in parts]
        return pa.concat_tables(tables, promote_options="permissive").column("rows").combine_chunks()


def _all_plain(keys: set[FileKey]) -> bool:
    return all(dv is None and "%" not in p and not p.startswith("/") and ":" not in p for p, dv in keys)


def _any_unusual(paths: pa.Array) -> bool:
    """Whether any path is absolute, a URI or percent-encoded."""
    for pattern in ("%", ":"):
        if pc.any(pc.match_substring(paths, pattern)).as_py():
            return True
    return bool(pc.any(pc.starts_with(paths, "/")).as_py())


def _dv_dicts(rows: pa.Array) -> list[dict[str, Any] | None]:
    return pc.struct_field(rows, _DELETION_VECTOR).to_pylist()


def _small_actions(cls: type[Protocol | Metadata | Txn | DomainMetadata], column: pa.ChunkedArray) -> list[Action]:
    return [cls.from_json(_maps_to_dicts(row)) for row in column.filter(pc.is_valid(column)).to_pylist()]


def _maps_to_dicts(value: Any) -> Any:
    """pyarrow gives map values as lists of (key, value) tuples."""
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: v for k, v in value}
    return value


def _adds(column: pa.Array) -> list[AddFile]:
    """The checkpoint's ``add`` rows; a file with struct stats only keeps them in ``stats_parsed``."""
    adds = [AddFile.from_json(row) for row in struct_rows(AddFile, column)]
    if column.type.get_field_index(_STATS_PARSED) >= 0:
        for add, parsed in zip(adds, pc.struct_field(column, _STATS_PARSED).to_pylist()):
            if add.stats is None and parsed is not None:
                add.stats_parsed = _jsonable(parsed)
    return adds


def _removes(column: pa.Array) -> list[RemoveFile]:
    return [RemoveFile.from_json(row) for row in struct_rows(RemoveFile, column)]


def _jsonable(value: Any) -> Any:
    """``stats_parsed`` values in the same shape as JSON ``stats``."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.isoformat(timespec="milliseconds")
        return value.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return None
    return value
