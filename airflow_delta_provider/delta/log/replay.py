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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

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
        for name in ("protocol", "metaData", "txn", "domainMetadata"):
            if name in table.column_names:
                self.apply(_small_actions(name, table.column(name)))
        if "add" in table.column_names:
            self._checkpoint_adds.append(_valid_rows(table.column("add")))
        if "remove" in table.column_names:
            self._checkpoint_removes.append(_valid_rows(table.column("remove")))

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
            ckpt = pc.sum(pc.struct_field(self._ckpt_adds, "size")).as_py() or 0
        return ckpt + sum(a.size for a in self._adds.values())

    def sizes(self) -> list[int]:
        """The size of each live file."""
        ckpt = pc.struct_field(self._ckpt_adds, "size").to_pylist() if self._ckpt_adds is not None else []
        return ckpt + [a.size for a in self._adds.values()]

    def deleted_row_counts(self) -> list[int]:
        """The rows each live file's deletion vector hides (0 without one)."""
        ckpt: list[int] = []
        rows = self._ckpt_adds
        if rows is not None and len(rows):
            if rows.type.get_field_index("deletionVector") >= 0:
                dv = pc.struct_field(rows, "deletionVector")
                ckpt = pc.fill_null(pc.struct_field(dv, "cardinality"), 0).to_pylist()
            else:
                ckpt = [0] * len(rows)
        return ckpt + [a.deletion_vector.cardinality if a.deletion_vector else 0 for a in self._adds.values()]

    def paths(self) -> list[str]:
        """The log paths of the live files, without building :class:`AddFile` s."""
        ckpt = pc.struct_field(self._ckpt_adds, "path").to_pylist() if self._ckpt_adds is not None else []
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

            columns["path"].append(col("path", pa.string()))
            columns["size"].append(pc.cast(col("size", pa.int64()), pa.int64()))
            columns["modificationTime"].append(pc.cast(col("modificationTime", pa.int64()), pa.int64()))
            records = _num_records(col("stats", pa.string()))
            if (
                "stats_parsed" in fields
                and pc.struct_field(rows, "stats_parsed").type.get_field_index("numRecords") >= 0
            ):
                parsed = pc.struct_field(pc.struct_field(rows, "stats_parsed"), "numRecords")
                records = pc.coalesce(records, pc.cast(parsed, pa.int64()))
            columns["numRecords"].append(records)
            dv = col("deletionVector", pa.struct([("cardinality", pa.int64())]))
            columns["dvCardinality"].append(pc.cast(pc.fill_null(pc.struct_field(dv, "cardinality"), 0), pa.int64()))
            columns["clusteringProvider"].append(col("clusteringProvider", pa.string()))
            values = col("partitionValues", pa.map_(pa.string(), pa.string()))
            for key in partition_keys:
                columns[key].append(pc.map_lookup(values, key, "first"))
        if adds:
            columns["path"].append(pa.array([a.path for a in adds], pa.string()))
            columns["size"].append(pa.array([a.size for a in adds], pa.int64()))
            columns["modificationTime"].append(pa.array([a.modification_time for a in adds], pa.int64()))
            columns["numRecords"].append(
                pc.coalesce(
                    _num_records(pa.array([a.stats for a in adds], pa.string())),
                    pa.array([_parsed_records(a) for a in adds], pa.int64()),
                )
            )
            columns["dvCardinality"].append(pa.array([a.num_deleted_records for a in adds], pa.int64()))
            columns["clusteringProvider"].append(pa.array([a.clustering_provider for a in adds], pa.string()))
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
    "path": pa.string(),
    "size": pa.int64(),
    "modificationTime": pa.int64(),
    "numRecords": pa.int64(),
    "dvCardinality": pa.int64(),
    "clusteringProvider": pa.string(),
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
    if rows.type.get_field_index("deletionVector") >= 0:
        dv = pc.struct_field(rows, "deletionVector")
        has_dv = dv.null_count < len(dv)
    else:
        has_dv = False
    path_column = pc.struct_field(rows, "path")
    if not _any_unusual(path_column):
        # Common case: relative, unescaped paths are canonical as they are, so
        # only a row whose path a commit touched can have a touched key.
        hit = pc.fill_null(pc.is_in(path_column, value_set=pa.array([p for p, _ in touched], pa.string())), False)
        if not has_dv and _all_plain(touched):
            return rows.filter(pc.invert(hit))
        candidates = pc.indices_nonzero(hit).to_pylist()
        dvs = pc.struct_field(rows, "deletionVector") if has_dv else None
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
    return pc.struct_field(rows, "deletionVector").to_pylist()


def _small_actions(name: str, column: pa.ChunkedArray) -> list[Action]:
    return [_SMALL_PARSERS[name](_maps_to_dicts(row)) for row in column.filter(pc.is_valid(column)).to_pylist()]


#: The checkpoint columns that hold actions replay applies.
ACTION_COLUMNS = ("protocol", "metaData", "txn", "domainMetadata", "remove", "add")


_SMALL_PARSERS: dict[str, Callable[[Mapping[str, Any]], Action]] = {
    "protocol": Protocol.from_json,
    "metaData": Metadata.from_json,
    "txn": Txn.from_json,
    "domainMetadata": DomainMetadata.from_json,
}


def _maps_to_dicts(value: Any) -> Any:
    """pyarrow gives map values as lists of (key, value) tuples."""
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: v for k, v in value}
    return value


def _field_lists(column: pa.Array) -> tuple[int, dict[str, list[Any]]]:
    """Rows of a struct array as one Python list per child field."""
    n = len(column)
    struct_type: pa.StructType = column.type
    lists: dict[str, list[Any]] = {}
    for i in range(struct_type.num_fields):
        name = struct_type.field(i).name
        lists[name] = pc.struct_field(column, [i]).to_pylist()
    return n, lists


def _col(lists: dict[str, list[Any]], name: str, n: int) -> list[Any]:
    return lists.get(name) or [None] * n


def _pairs_to_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return dict(value) if not isinstance(value, dict) else value


def _dv(value: dict[str, Any] | None) -> DeletionVector | None:
    return DeletionVector.from_json(value) if value else None


def _adds(column: pa.Array) -> list[AddFile]:
    n, f = _field_lists(column)
    stats = _col(f, "stats", n)
    parsed = _col(f, "stats_parsed", n)
    out = []
    for path, pv, size, mtime, dc, st, sp, tags, dv, brid, drcv, provider in zip(
        f["path"],
        _col(f, "partitionValues", n),
        _col(f, "size", n),
        _col(f, "modificationTime", n),
        _col(f, "dataChange", n),
        stats,
        parsed,
        _col(f, "tags", n),
        _col(f, "deletionVector", n),
        _col(f, "baseRowId", n),
        _col(f, "defaultRowCommitVersion", n),
        _col(f, "clusteringProvider", n),
    ):
        out.append(
            AddFile(
                path=path,
                partition_values=dict(pv) if pv else {},
                size=size or 0,
                modification_time=mtime or 0,
                data_change=bool(dc) if dc is not None else False,
                stats=st,
                tags=dict(tags) if tags else None,
                deletion_vector=_dv(dv) if dv else None,
                base_row_id=brid,
                default_row_commit_version=drcv,
                clustering_provider=provider,
                stats_parsed=_jsonable(sp) if st is None and sp is not None else None,
            )
        )
    return out


def _removes(column: pa.Array) -> list[RemoveFile]:
    n, f = _field_lists(column)
    out = []
    for path, ts, dc, ext, pv, size, tags, dv, brid, drcv in zip(
        f["path"],
        _col(f, "deletionTimestamp", n),
        _col(f, "dataChange", n),
        _col(f, "extendedFileMetadata", n),
        _col(f, "partitionValues", n),
        _col(f, "size", n),
        _col(f, "tags", n),
        _col(f, "deletionVector", n),
        _col(f, "baseRowId", n),
        _col(f, "defaultRowCommitVersion", n),
    ):
        out.append(
            RemoveFile(
                path=path,
                deletion_timestamp=ts,
                data_change=bool(dc) if dc is not None else False,
                extended_file_metadata=ext,
                partition_values=_pairs_to_dict(pv),
                size=size,
                tags=_pairs_to_dict(tags) or None,
                deletion_vector=_dv(dv),
                base_row_id=brid,
                default_row_commit_version=drcv,
            )
        )
    return out


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
