"""CONVERT TO DELTA: a folder of Parquet files becomes a Delta table in place.

Follows delta-spark's ``ConvertToDeltaCommand`` and delta-rs's
``convert_to_delta.rs``:

1. a path that already holds a Delta table is refused
   (:class:`~airflow_delta_provider.delta.errors.TableAlreadyExistsError`);
2. every ``.parquet`` file under the root is listed; hidden names (``_`` or
   ``.`` first, such as ``_SUCCESS``, ``_committed_*``, ``.part-*.crc``; a
   ``_col=value`` folder of a partition column is not hidden) are skipped,
   the way delta-spark's hidden-file filter and VACUUM read them. No file
   found is an error;
3. with partition columns (``"col type, ..."``), each file must sit in Hive
   folders ``col=value``, one per column in the given order (names matched
   case-insensitively); each value is unescaped (``%XX``),
   ``__HIVE_DEFAULT_PARTITION__`` is null, and it must parse as the column's
   type. It is recorded in its canonical form. Without them, a file in a
   folder is refused, as delta-rs refuses it;
4. the schema is the footers' schemas merged: a column missing from some
   files is null there, and a column whose type differs between two files
   is refused, naming both files (no widening: the files would not read back
   as the merged type). Timestamps of any unit are ``timestamp`` (with a
   zone) or ``timestamp_ntz``, as in delta-rs. Partition columns follow the
   data columns, and may not also be data columns;
5. stats come from the footers (:mod:`~airflow_delta_provider.delta.file_stats`),
   for the columns ``delta.dataSkippingNumIndexedCols`` (or
   ``delta.dataSkippingStatsColumns``) selects. A file whose footer lacks a
   column's statistics gets none for that column; ``numRecords`` is always known;
6. version 0 is written: the protocol the properties need, the metadata, an
   ``add`` per file (relative, URI-encoded path; the listing's size and
   modification time) and delta-spark's ``CONVERT`` commitInfo. No data file
   is read beyond its footer, copied, moved or written.

Bad input changes nothing: every check runs before the commit, and the commit
is the only write.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError, TableAlreadyExistsError
from airflow_delta_provider.delta.file_stats import stats_from_footer, stats_json
from airflow_delta_provider.delta.partitions import (
    HIVE_DEFAULT_PARTITION,
    encode_path,
    parse_partition_value,
    serialize_partition_value,
)
from airflow_delta_provider.delta.schema.arrow import from_arrow_schema
from airflow_delta_provider.delta.schema.fields import stats_leaves
from airflow_delta_provider.delta.schema.names import check_column_names
from airflow_delta_provider.delta.schema.types import (
    as_nullable,
    fields_of,
    kind_of,
    normalize_type,
    schema_string,
    struct_field,
    struct_type,
)
from airflow_delta_provider.delta.storage.hidden_paths import is_hidden_path
from airflow_delta_provider.delta.storage.store import ObjectMeta
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import column_mapping
from airflow_delta_provider.delta.transaction.transaction import CommitResult
from airflow_delta_provider.operations.convert.metrics import ConvertMetrics
from airflow_delta_provider.operations.convert.partition_spec import PARTITION_TYPES, parse_partition_spec

OPERATION = "CONVERT"
PARQUET_SUFFIX = ".parquet"
#: Files whose footers are read at once from an object store.
_FOOTER_THREADS = 16
#: Bytes read from the end of a remote file, to get its footer in one request (most fit).
_FOOTER_GUESS = 64 * 1024


@dataclasses.dataclass
class ConvertPlan:
    """What a CONVERT commits: the table's schema, partition columns and files."""

    schema: dict[str, Any]
    partition_columns: list[str]
    adds: list[AddFile]

    def metrics(self) -> ConvertMetrics:
        """delta-spark's CONVERT ``operationMetrics``."""
        return ConvertMetrics(num_converted_files=len(self.adds))

    def parameters(self) -> dict[str, Any]:
        """delta-spark's CONVERT ``operationParameters``."""
        return {
            "numFiles": len(self.adds),
            "partitionedBy": json.dumps(self.partition_columns),
            "collectStats": True,
            "sourceFormat": "parquet",
        }


@dataclasses.dataclass(frozen=True)
class _Footer:
    meta: ObjectMeta
    parquet: Any  # pyarrow.parquet.FileMetaData
    schema: dict[str, Any]  # Delta schema, nullable
    partition_values: dict[str, str | None]


def plan_convert(
    table: DeltaTable,
    partition_by: str | Sequence[tuple[str, str]] | None = None,
    properties: Mapping[str, str] | None = None,
) -> ConvertPlan:
    """The CONVERT of the folder at ``table``'s root; nothing is written."""
    partitions = (
        parse_partition_spec(partition_by)
        if isinstance(partition_by, str) or partition_by is None
        else list(partition_by)
    )
    properties = dict(properties or {})
    if column_mapping.mode_of(properties) != column_mapping.NONE:
        raise InvalidInputError(
            "CONVERT TO DELTA cannot turn column mapping on: the Parquet files have no field ids; "
            "convert, then turn it on with ALTER"
        )
    if table.exists():
        raise TableAlreadyExistsError(f"{table.uri} is a Delta table already: there is nothing to convert")
    names = [name for name, _ in partitions]
    files = sorted(
        (
            meta
            for meta in table.storage.list_tree("")
            if not meta.is_dir and meta.path.endswith(PARQUET_SUFFIX) and not is_hidden_path(meta.path, names)
        ),
        key=lambda m: m.path,
    )
    if not files:
        raise InvalidInputError(f"no Parquet files under {table.uri} (hidden names like _SUCCESS do not count)")
    values = {meta.path: _partition_values(meta.path, partitions) for meta in files}
    schemas: dict[Any, dict[str, Any]] = {}  # Arrow schema -> Delta schema: most files share one

    def footer(meta: ObjectMeta) -> _Footer:
        return _read_footer(table, meta, values[meta.path], schemas)

    if table.storage.is_local:  # footers on a local disk: parsing them is the work, threads only contend
        footers = [footer(meta) for meta in files]
    else:  # one request per footer: overlap them
        with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, len(files))) as pool:
            footers = list(pool.map(footer, files))
    schema = _merged_schema(footers, names)
    schema = struct_type([*fields_of(schema), *(struct_field(n, t, True) for n, t in partitions)])
    check_column_names(schema)  # a converted table has no column mapping: delta-spark's name rules hold
    leaves = stats_leaves(schema, names, properties)
    adds = [
        AddFile(
            path=encode_path(f.meta.path),
            partition_values=f.partition_values,
            size=f.meta.size,
            modification_time=f.meta.mtime_ms,
            data_change=True,
            stats=stats_json(stats_from_footer(f.parquet, leaves)),
        )
        for f in footers
    ]
    return ConvertPlan(schema, names, adds)


def convert_to_delta(
    table: DeltaTable,
    partition_by: str | Sequence[tuple[str, str]] | None = None,
    properties: Mapping[str, str] | None = None,
    token: str | None = None,
) -> tuple[CommitResult, ConvertPlan]:
    """CONVERT the folder at ``table``'s root; the commit (version 0) and its plan."""
    plan = plan_convert(table, partition_by, properties)
    metadata = Metadata.new(
        schema_string(plan.schema), plan.partition_columns, dict(properties or {}), created_time=int(time.time() * 1000)
    )
    txn = table.transaction(OPERATION, parameters=plan.parameters(), snapshot=None)
    txn.update_metadata(metadata)
    txn.add_all(plan.adds)
    return txn.commit(metrics=plan.metrics().commit_metrics(), token=token), plan


def _partition_values(path: str, partitions: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """The canonical partition values of the file at ``path``, from its Hive folders."""
    folders = path.split("/")[:-1]
    expected = " / ".join(f"{name}=..." for name, _ in partitions) or "no folder"
    if len(folders) != len(partitions):
        raise InvalidInputError(
            f"{path}: expected {len(partitions)} partition folder(s) ({expected}), found {len(folders)}; "
            "give the partition columns in the order of the folders"
            if partitions
            else f"{path} is in a folder: give the partition columns (--partition-by 'col type, ...')"
        )
    out: dict[str, str | None] = {}
    for folder, (name, delta_type) in zip(folders, partitions):
        key, sep, raw = folder.partition("=")
        if not sep or unquote(key).lower() != name.lower():
            raise InvalidInputError(f"{path}: folder {folder!r} is not {name}=<value> ({expected})")
        text = None if raw == HIVE_DEFAULT_PARTITION else unquote(raw)
        try:
            value = parse_partition_value(text, delta_type)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path}: partition column {name!r}: {exc}") from None
        out[name] = None if value is None else serialize_partition_value(value, delta_type)
    return out


def _read_footer(
    table: DeltaTable, meta: ObjectMeta, partition_values: dict[str, str | None], schemas: dict[Any, dict[str, Any]]
) -> _Footer:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if table.storage.is_local:
            with table.storage.open_input_file(meta.path) as source:
                parquet = pq.read_metadata(source)
        else:
            parquet = pq.read_metadata(pa.BufferReader(_footer_bytes(table, meta)))
        arrow_schema = parquet.schema.to_arrow_schema()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidInputError(f"{meta.path} is not a readable Parquet file: {exc}") from None
    key = (arrow_schema, any(parquet.schema.column(i).physical_type == "INT96" for i in range(parquet.num_columns)))
    schema = schemas.get(key)
    if schema is None:
        try:
            schema = as_nullable(from_arrow_schema(arrow_schema, metadata=False))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{meta.path}: {exc}") from None
        schema = schemas[key] = _int96_as_timestamp(schema, parquet)
    return _Footer(meta, parquet, schema, partition_values)


def _footer_bytes(table: DeltaTable, meta: ObjectMeta) -> bytes:
    """The end of a remote file that holds its footer (PROTOCOL: ``<footer><length:4><PAR1>``):
    one ranged read of :data:`_FOOTER_GUESS` bytes, a second when the footer is longer."""
    tail = table.storage.get_range(meta.path, max(0, meta.size - _FOOTER_GUESS), meta.size)
    if len(tail) < 12 or tail[-4:] != b"PAR1":
        raise OSError("no parquet footer at the end of the file")
    needed = int.from_bytes(tail[-8:-4], "little") + 8
    if needed > meta.size:
        raise OSError(f"footer length {needed} is past the start of the file")
    if needed > len(tail):
        tail = table.storage.get_range(meta.path, meta.size - needed, meta.size)
    return tail


def _int96_as_timestamp(schema: dict[str, Any], parquet: Any) -> dict[str, Any]:
    """Spark's INT96 columns (its default timestamp encoding) are ``timestamp``
    with a zone, as Spark reads them; pyarrow reads them without one."""
    int96 = {
        parquet.schema.column(i).path.lower()
        for i in range(parquet.num_columns)
        if parquet.schema.column(i).physical_type == "INT96"
    }
    if not int96:
        return schema
    return struct_type({**f, "type": "timestamp"} if f["name"].lower() in int96 else f for f in fields_of(schema))


def _merged_schema(footers: Sequence[_Footer], partition_columns: Sequence[str]) -> dict[str, Any]:
    """The files' schemas merged: columns in first-seen order, each type equal in every file."""
    seen: dict[str, tuple[dict[str, Any], str]] = {}  # lower name -> (field, first file)
    for footer in footers:
        for field in fields_of(footer.schema):
            key = field["name"].lower()
            if key in (c.lower() for c in partition_columns):
                raise InvalidInputError(
                    f"{footer.meta.path} has a column {field['name']!r}, which is also a partition column"
                )
            if key not in seen:
                seen[key] = (field, footer.meta.path)
                continue
            first, where = seen[key]
            merged = _merge_type(first["type"], field["type"])
            if merged is None:
                raise SchemaMismatchError(
                    f"column {field['name']!r} is {_type_text(first['type'])} in {where} but "
                    f"{_type_text(field['type'])} in {footer.meta.path}: the files do not share a schema"
                )
            seen[key] = ({**first, "type": merged}, where)
    return struct_type(field for field, _ in seen.values())


def _merge_type(a: Any, b: Any) -> Any | None:
    """The type both files' values read as, or None: equal types; ``void``
    (a column of nulls) takes the other; structs merge field by field."""
    if a == "void":
        return b
    if b == "void":
        return a
    if kind_of(a) == "struct" and kind_of(b) == "struct":
        fields = {f["name"].lower(): f for f in fields_of(a)}
        for f in fields_of(b):
            key = f["name"].lower()
            if key in fields:
                merged = _merge_type(fields[key]["type"], f["type"])
                if merged is None:
                    return None
                fields[key] = {**fields[key], "type": merged}
            else:
                fields[key] = f
        return struct_type(fields.values())
    return a if normalize_type(a) == normalize_type(b) else None


def _type_text(t: Any) -> str:
    return t if isinstance(t, str) else json.dumps(t)


__all__ = ["OPERATION", "PARTITION_TYPES", "ConvertPlan", "convert_to_delta", "parse_partition_spec", "plan_convert"]
