"""Write a DataFrame into a table folder as Delta data files.

Two ways to write, by I/O mode (:mod:`.io_mode`):

- ``hadoop``: Spark writes the data once, into a hidden staging folder
  inside the table root (``_delta_staging_<uuid>/``; names starting with
  ``_`` are invisible to readers, and VACUUM reclaims such a folder a killed
  driver left once it is older than the retention), through its Hadoop
  FileSystem. The driver then moves each file to its Delta name and Hive
  folder (a rename on the local filesystem; through the storage seam on an
  object store) and reads its parquet footer for the stats, so there is no
  second pass over the data.
- ``arrow``: ``mapInArrow`` tasks write the files in place with pyarrow
  through the storage seam (:mod:`.arrow_write`), stats from the writer's
  own footer.

Nothing becomes part of the table until the caller commits the returned
``add`` actions; :class:`WrittenFiles` (or :func:`delete_written_files`)
removes them when that commit does not happen.

Before writing, the frame is conformed to the table schema (column order,
names, types, missing columns as null), and NOT NULL columns,
``delta.invariants``, CHECK constraints and generated columns are checked inside the same job: a violating row fails
the write with :class:`InvariantViolationError`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import Any, TypeAlias

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import CommitFailedError, InvalidInputError, InvariantViolationError
from airflow_delta_provider.delta.file_stats import file_stats, stats_from_footer, stats_json
from airflow_delta_provider.delta.partitions import (
    HIVE_DEFAULT_PARTITION,
    encode_path,
    parse_partition_value,
    partition_dir,
    random_file_prefix,
    relative_to_root,
    serialize_partition_value,
    unescape_partition_value,
)
from airflow_delta_provider.delta.schema.fields import stats_leaves, walk_fields
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.storage import TableStorage, open_storage
from airflow_delta_provider.delta.storage.hidden_paths import STAGING_PREFIX
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features.change_data_feed import CHANGE_DATA_DIR, CHANGE_TYPE_COLUMN
from airflow_delta_provider.delta.table_features.check_constraints import referenced_columns, table_constraints
from airflow_delta_provider.delta.table_features.column_mapping import PARQUET_FIELD_ID_KEY, ColumnMapping
from airflow_delta_provider.spark.read.files import column, spark_schema
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io
from airflow_delta_provider.spark.write import optimized_write
from airflow_delta_provider.spark.write.generated_columns import generated_checks

#: A table as the writers take it: a snapshot, a DeltaTable, its storage or its root.
TableTarget: TypeAlias = "Snapshot | DeltaTable | TableStorage | str | os.PathLike[str]"

_SPARK_PART = re.compile(r"^part-(\d+)-.*\.parquet$")
_VIOLATION_MARK = "[delta-constraint] "


def table_root_of(target: TableTarget) -> str:
    """The table folder of a snapshot, a DeltaTable, a TableStorage or a path."""
    if isinstance(target, Snapshot):
        return target.table_root
    if isinstance(target, (DeltaTable, TableStorage)):
        return target.root
    return os.fspath(target)


def storage_of(target: TableTarget) -> TableStorage:
    """The storage of a table given as a TableStorage, a DeltaTable, a snapshot or a root."""
    if isinstance(target, TableStorage):
        return target
    storage = getattr(target, "storage", None)  # DeltaTable
    if isinstance(storage, TableStorage):
        return storage
    storage = getattr(getattr(target, "log_store", None), "storage", None)  # Snapshot
    if isinstance(storage, TableStorage):
        return storage
    return open_storage(table_root_of(target))


def write_files(
    df: DataFrame,
    target: TableTarget,
    schema: Mapping[str, Any],
    partition_columns: Sequence[str],
    *,
    target_file_count: int | None = None,
    configuration: Mapping[str, str] | None = None,
    io: str = "auto",
    hidden_columns: Sequence[str] = (),
    change_data: bool = False,
    row_checks: Mapping[str, str] | None = None,
    optimized: bool = False,
) -> list[AddFile]:
    """Write ``df`` as data files of a table with ``schema``; the ``add`` actions.

    ``target`` is the table: a snapshot, a DeltaTable, a TableStorage or a
    root. ``configuration`` (table properties) picks the stats columns; it
    defaults to the snapshot's when a snapshot is given. ``io`` is the I/O
    mode (:mod:`.io_mode`). Files holding no rows are not kept.
    ``hidden_columns`` are columns of ``df`` outside the schema that the
    files hold too, under those very names, after the table's columns (row
    tracking's materialized columns: physical names, never in the stats).

    ``change_data``: ``df`` holds changed rows with a ``_change_type``
    column, written with it under ``_change_data/`` (the caller turns the
    returned actions into ``cdc`` ones); they are neither checked against
    the table's constraints (a pre-image is an old row) nor given stats.

    ``row_checks``: more conditions every row must meet, checked in the same
    job as the table's constraints, ``{message: SQL}``; a row that does not
    fails the write with the message and the row's values of the columns the
    condition reads (APPEND's ``replace_where``, as delta-spark checks it).

    ``optimized``: a data write (APPEND, UPDATE, DELETE, MERGE), which the
    table's ``delta.autoOptimize.optimizeWrite`` rebalances by partition
    into files near the bin size (:mod:`.optimized_write`).
    """
    storage = storage_of(target)
    if configuration is None:
        configuration = getattr(target, "configuration", None) or {}
    partition_columns = list(partition_columns)
    mode = resolve_io(df.sparkSession, storage.location, io)
    extra = (CHANGE_TYPE_COLUMN,) if change_data else ()
    keep = [*hidden_columns, *extra]
    conformed = conform(df, schema, keep=keep)
    if not change_data:
        conformed = enforce_constraints(conformed, schema, table_constraints(configuration), keep, row_checks)
    leaves = [] if change_data else stats_leaves(schema, partition_columns, configuration)  # logical names
    mapping = ColumnMapping.of(schema, configuration)
    if mapping.enabled:  # files hold physical names (and field ids): so do stats and partition values
        conformed = to_physical(conformed, mapping)
        leaves = [(mapping.physical_path(path), delta_type) for path, delta_type in leaves]
        partition_columns = [mapping.physical_column(c) for c in partition_columns]
        schema = mapping.physical_schema(for_write=True)
    prefix = CHANGE_DATA_DIR if change_data else ""
    random_prefix = 0 if change_data else table_properties.random_prefix_length(configuration)
    field_ids = {
        path: f["metadata"][PARQUET_FIELD_ID_KEY]
        for path, f in walk_fields(schema)
        if PARQUET_FIELD_ID_KEY in (f.get("metadata") or {})
    }
    types = _partition_types(schema, partition_columns)
    if target_file_count:
        conformed = conformed.repartition(target_file_count)
    sizing: AbstractContextManager[None] = nullcontext()
    if optimized and not target_file_count and table_properties.optimize_write_enabled(configuration):
        conformed = optimized_write.rebalanced(conformed, partition_columns)
        sizing = optimized_write.advisory_size(df.sparkSession, optimized_write.bin_size(configuration))
    with sizing:
        if mode == ARROW:
            from airflow_delta_provider.spark.write.arrow_writer import write_arrow

            excluded = {c.lower() for c in partition_columns}
            data_columns = [f["name"] for f in schema.get("fields", ()) if f["name"].lower() not in excluded]
            try:
                columns = [*data_columns, *keep]
                return write_arrow(
                    conformed,
                    storage,
                    columns,
                    partition_columns,
                    types,
                    leaves,
                    field_ids,
                    prefix=prefix,
                    random_prefix_length=random_prefix,
                )
            except job_error_types() as exc:
                _raise_violation(exc)
                raise
        return _write_hadoop(conformed, storage, partition_columns, types, leaves, prefix, random_prefix)


def _write_hadoop(
    conformed: DataFrame,
    storage: TableStorage,
    partition_columns: list[str],
    types: dict[str, str],
    leaves: list[tuple[tuple[str, ...], Any]],
    prefix: str = "",
    random_prefix_length: int = 0,
) -> list[AddFile]:
    """Spark writes into a staging folder; the files are then moved into the
    table (under ``prefix``, a folder of the root, when given)."""
    staging = f"{STAGING_PREFIX}{uuid.uuid4()}"
    location = storage.location
    adds: list[AddFile] = []
    try:
        writer = conformed.write.mode("error").option("compression", "snappy")
        if partition_columns:
            writer = writer.partitionBy(*partition_columns)
        try:
            writer.parquet(f"{location.spark_uri().rstrip('/')}/{staging}")
        except PySparkException as exc:
            _raise_violation(exc)
            raise
        adds = _publish(storage, staging, partition_columns, types, leaves, prefix, random_prefix_length)
        return adds
    except BaseException:
        delete_written_files(storage, adds)
        raise
    finally:
        _remove_staging(storage, staging)


def delete_written_files(target: TableTarget, adds: Iterable[AddFile]) -> None:
    """Remove data files written for a commit that did not happen.

    ``target`` is the table (a TableStorage, a DeltaTable, a snapshot or a root).
    """
    adds = list(adds)
    if not adds:
        return
    storage = storage_of(target)
    paths = []
    for add in adds:
        rel = relative_to_root(storage.location, add.path)
        if rel is not None:
            paths.append(rel)
    storage.delete_many(paths)


class WrittenFiles:
    """Data files written for one commit, deleted if a failure means it did not land.

    Wrap the steps from the write to the commit in ``with WrittenFiles(table,
    adds) as written:`` (``table``: a TableStorage, a DeltaTable, a snapshot
    or a root) and call :meth:`committing` just before the
    transaction's ``commit``. When an exception leaves the block the files
    are deleted only if the commit surely did not happen: the failure came
    before :meth:`committing`, or the commit raised :class:`CommitFailedError`
    (conflicts included; no version was written). Any other error from the
    commit may come after the version's log entry exists (the post-commit
    checkpoint, say), and then the files belong to the table: they are kept.
    An orphan file is harmless (VACUUM removes it); a deleted committed file
    corrupts the table.

    ``adds`` is kept by reference, so a list that grows inside the block
    (several writes) is covered whole; so is ``other_files``, the paths
    (relative to the root) of other files written for the commit, such as a
    deletion vector file.
    """

    def __init__(self, table: TableTarget, adds: list[AddFile], other_files: list[str] | None = None) -> None:
        self.table = table
        self.adds = adds
        self.other_files = other_files if other_files is not None else []
        self._committing = False

    def committing(self) -> None:
        """Mark the start of the commit: from here only CommitFailedError deletes."""
        self._committing = True

    def __enter__(self) -> WrittenFiles:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            return
        if not self._committing or isinstance(exc, CommitFailedError):
            delete_written_files(self.table, self.adds)
            if self.other_files:
                storage_of(self.table).delete_many(self.other_files)


# --- Moving staged files into the table ----------------------------------------


def _publish(
    storage: TableStorage,
    staging: str,
    partition_columns: list[str],
    types: dict[str, str],
    leaves: list[tuple[tuple[str, ...], Any]],
    folder_prefix: str = "",
    random_prefix_length: int = 0,
) -> list[AddFile]:
    """Move the part files Spark wrote under ``staging`` to their Delta
    names and folders (under ``folder_prefix``; a folder of
    ``random_prefix_length`` random characters instead of the partition
    folder, when not 0); their ``add`` actions (files of no rows are dropped)."""
    prefix = staging + "/"
    moved: list[tuple[str, dict[str, str | None], int, int]] = []  # (rel path, values, size, mtime)
    try:
        for meta in sorted(storage.list_tree(staging), key=lambda m: m.path):
            rel_dir, _, name = meta.path[len(prefix) :].rpartition("/")
            m = _SPARK_PART.match(name)
            if meta.is_dir or not m:
                continue  # folders, _SUCCESS, .crc checksums
            values = _spark_dir_values(rel_dir, partition_columns, types)
            if random_prefix_length:
                folder = random_file_prefix(random_prefix_length)
            else:
                folder = partition_dir(partition_columns, values, types) if partition_columns else ""
            final = f"part-{int(m.group(1)):05d}-{uuid.uuid4()}.c000.snappy.parquet"
            rel = "/".join(p for p in (folder_prefix, folder, final) if p)
            storage.move(meta.path, rel)
            moved.append((rel, values, meta.size, meta.mtime_ms))
        with ThreadPoolExecutor(max_workers=min(8, max(1, len(moved)))) as pool:
            all_stats = list(pool.map(lambda m: _footer_stats(storage, m[0], leaves), moved))
    except BaseException:
        storage.delete_many([rel for rel, _values, _size, _mtime in moved])
        raise
    adds: list[AddFile] = []
    empty: list[str] = []
    for (rel, values, size, mtime), stats in zip(moved, all_stats):
        if stats["numRecords"] == 0:
            empty.append(rel)
            continue
        if storage.is_local:
            st = os.stat(storage.location.child(rel))
            size, mtime = st.st_size, st.st_mtime_ns // 1_000_000
        adds.append(
            AddFile(
                path=encode_path(rel),
                partition_values=values,
                size=size,
                modification_time=mtime,
                data_change=True,
                stats=stats_json(stats),
            )
        )
    if empty:
        storage.delete_many(empty)
    return adds


def _footer_stats(storage: TableStorage, rel: str, leaves: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    """Delta stats from the footer of a file of the table."""
    if storage.is_local:
        return file_stats(storage.location.child(rel), leaves)
    import pyarrow.parquet as pq

    with storage.open_input_file(rel) as f:
        return stats_from_footer(pq.ParquetFile(f).metadata, leaves)


def _remove_staging(storage: TableStorage, staging: str) -> None:
    """Remove a staging folder and whatever is left in it."""
    if storage.is_local:
        shutil.rmtree(storage.location.child(staging), ignore_errors=True)
        return
    leftovers = [m.path for m in storage.list_tree(staging) if not m.is_dir]
    if leftovers:
        storage.delete_many(leftovers)


def _partition_types(schema: Mapping[str, Any], partition_columns: list[str]) -> dict[str, str]:
    by_name = {f["name"].lower(): f["type"] for f in schema.get("fields", ())}
    types = {}
    for c in partition_columns:
        t = by_name.get(c.lower())
        if t is None:
            raise InvalidInputError(f"partition column {c!r} is not in the schema")
        if not isinstance(t, str):
            raise InvalidInputError(f"partition column {c!r} has a complex type; it cannot partition a table")
        types[c] = t
    return types


def _spark_dir_values(rel_dir: str, partition_columns: list[str], types: dict[str, str]) -> dict[str, str | None]:
    """Serialized partition values of a folder Spark wrote (``a=1/b=x``).

    The folder text is parsed to the column's type and serialized again the
    Delta way, so that e.g. timestamps are logged in ISO UTC form.
    """
    if not partition_columns:
        return {}
    parts = [] if rel_dir in (".", "") else rel_dir.split("/")
    if len(parts) != len(partition_columns):
        raise InvalidInputError(f"unexpected partition folder {rel_dir!r} for columns {partition_columns}")
    values: dict[str, str | None] = {}
    for col, part in zip(partition_columns, parts):
        _name, _, text = part.partition("=")
        raw = None if text == HIVE_DEFAULT_PARTITION else unescape_partition_value(text)
        values[col] = serialize_partition_value(parse_partition_value(raw, types[col]), types[col])
    return values


# --- Conforming the frame to the table schema -----------------------------------


def to_physical(df: DataFrame, mapping: ColumnMapping) -> DataFrame:
    """A conformed frame (the table's logical columns, in order) with the
    physical names and the parquet field ids of ``mapping`` at every level: nested fields are relabelled by a cast between structs
    of the same shape, whose target carries the ids."""
    physical = spark_schema(mapping.physical_schema(for_write=True))
    n = len(physical.fields)
    return df.select(
        *[
            column(name).cast(f.dataType).alias(f.name, metadata=f.metadata)
            for name, f in zip(df.columns, physical.fields)
        ],
        *[column(name) for name in df.columns[n:]],  # columns after the table's pass through
    )


def conform(df: DataFrame, schema: Mapping[str, Any], keep: Sequence[str] = ()) -> DataFrame:
    """``df`` with exactly the table's columns, in order, names and types,
    followed by its columns named in ``keep``, as they are.

    Columns match case-insensitively; a table column the frame lacks is
    null; struct fields are conformed recursively (through arrays and map
    values too). Type checks belong to the caller (schema enforcement);
    here types are cast, which is a no-op when they already agree.
    """
    target = spark_schema(dict(schema))
    fields = df.schema.fields
    if [f.name for f in fields] == [*target.names, *keep] and all(
        _same(f.dataType, t.dataType) for f, t in zip(fields, target.fields)
    ):
        return df  # already the table's columns, in order, with its types
    source = {f.name.lower(): f for f in fields}
    columns: list[Column] = []
    for field in target.fields:
        src = source.get(field.name.lower())
        if src is None:
            expr = F.lit(None).cast(field.dataType)
        else:
            expr = conform_column(column(src.name), src.dataType, field.dataType)
        columns.append(expr.alias(field.name))
    return df.select(*columns, *[column(name) for name in keep])


def conform_column(expr: Column, source: DataType, target: DataType) -> Column:
    """``expr`` (of type ``source``) as ``target``: struct fields matched by
    name at every depth (a missing one NULL), other types cast."""
    if _same(source, target):
        return expr
    if isinstance(target, StructType) and isinstance(source, StructType):
        by_name = {f.name.lower(): f for f in source.fields}
        children = []
        for f in target.fields:
            src = by_name.get(f.name.lower())
            child = (
                F.lit(None).cast(f.dataType)
                if src is None
                else conform_column(expr.getField(src.name), src.dataType, f.dataType)
            )
            children.append(child.alias(f.name))
        return F.when(expr.isNull(), F.lit(None)).otherwise(F.struct(*children))
    if isinstance(target, ArrayType) and isinstance(source, ArrayType):
        return F.transform(expr, lambda x: conform_column(x, source.elementType, target.elementType))
    if isinstance(target, MapType) and isinstance(source, MapType) and _same(source.keyType, target.keyType):
        return F.transform_values(expr, lambda _k, v: conform_column(v, source.valueType, target.valueType))
    return expr.cast(target)


def _same(a: DataType, b: DataType) -> bool:
    """Equal types, names included, nullability aside."""
    return _strip(a.jsonValue()) == _strip(b.jsonValue())


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


# --- NOT NULL, delta.invariants and CHECK constraints ------------------------------


def enforce_constraints(
    df: DataFrame,
    schema: Mapping[str, Any],
    constraints: Mapping[str, str] | None = None,
    keep: Sequence[str] = (),
    row_checks: Mapping[str, str] | None = None,
) -> DataFrame:
    """``df`` (already conformed) with every column guarded by its constraints.

    A row breaking a NOT NULL column (top-level, or nested in a present
    struct), a ``delta.invariants`` expression or one of the table's CHECK
    ``constraints`` (``{name: SQL}``; false or NULL breaks it, as in
    delta-spark), or a generated column that differs from its expression
    (``column <=> expression`` false: :mod:`.generated`) makes the job fail with a marked message, turned into
    :class:`InvariantViolationError` by :func:`write_files`. A CHECK
    constraint's message names it, its expression and the row's values of
    the columns it reads. Checking inside the write costs no extra pass over
    the data. The ``keep`` columns (after the table's) pass unguarded.
    ``row_checks`` (``{message: SQL}``) are checked the same way, each
    failing with its own message.
    """
    checks: dict[str, list[tuple[Column, Column]]] = {}
    for field in schema.get("fields", ()):
        found: list[tuple[Column, str]] = []
        _collect_checks(field, (field["name"],), None, found)
        if found:
            checks[field["name"]] = [(violated, F.lit(message)) for violated, message in found]
    for name, check in generated_checks(df.sparkSession, schema).items():  # column <=> its generation expression
        checks.setdefault(name, []).append(check)
    names = [f["name"] for f in schema.get("fields", ())]
    for name, sql in sorted((constraints or {}).items()):
        if names:  # a table-level check, guarding its first column
            checks.setdefault(names[0], []).append(_check_constraint(name, sql, names))
    for lead, sql in (row_checks or {}).items():
        if names:
            checks.setdefault(names[0], []).append(_check_constraint(lead, sql, names, lead))
    if not checks:
        return df
    columns = []
    for field in schema.get("fields", ()):
        expr = column(field["name"])
        for violated, message in checks.get(field["name"], ()):
            expr = F.when(violated, F.raise_error(F.concat(F.lit(_VIOLATION_MARK), message))).otherwise(expr)
        columns.append(expr.alias(field["name"]))
    return df.select(*columns, *[column(name) for name in keep])


def _check_constraint(name: str, sql: str, columns: list[str], lead: str | None = None) -> tuple[Column, Column]:
    """(the row breaks it, the message naming it and the row's values of the columns it reads).
    ``lead``: the message's start, instead of the CHECK constraint's."""
    try:
        holds = F.expr(sql)
    except PySparkException as exc:
        raise InvalidInputError(f"CHECK constraint {name} does not parse: {sql}") from exc
    read = referenced_columns(sql)
    shown = [c for c in columns if read is None or c.lower() in read]
    values = [F.concat(F.lit(f"{c} = "), F.coalesce(column(c).cast("string"), F.lit("NULL"))) for c in shown]
    message = F.concat(
        F.lit(lead if lead is not None else f"CHECK constraint {name} ({sql}) violated by row with values: "),
        F.concat_ws(", ", *values) if values else F.lit("(none)"),
    )
    return ~F.coalesce(holds, F.lit(False)), message


def _collect_checks(
    field: Mapping[str, Any],
    path: tuple[str, ...],
    parent_present: Column | None,
    out: list[tuple[Column, str]],
) -> None:
    ref = column(path[0])
    for name in path[1:]:
        ref = ref.getField(name)
    name = ".".join(path)
    if not field.get("nullable", True):
        missing = ref.isNull() if parent_present is None else (parent_present & ref.isNull())
        out.append((missing, f"NOT NULL constraint violated for column: {name}"))
    invariant = _invariant_sql(field.get("metadata") or {})
    if invariant:
        try:
            holds = F.expr(invariant)
        except PySparkException as exc:
            raise InvalidInputError(f"invariant of column {name} does not parse: {invariant}") from exc
        out.append((~F.coalesce(holds, F.lit(False)), f"invariant violated for column: {name}: {invariant}"))
    dtype = field.get("type")
    if isinstance(dtype, dict) and dtype.get("type") == "struct":
        present = ref.isNotNull() if parent_present is None else (parent_present & ref.isNotNull())
        for child in dtype.get("fields", ()):
            _collect_checks(child, path + (child["name"],), present, out)


def _invariant_sql(metadata: Mapping[str, Any]) -> str | None:
    raw = metadata.get("delta.invariants")
    if not raw:
        return None
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
        return parsed["expression"]["expression"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"unreadable delta.invariants {raw!r}") from exc


def job_error_types() -> tuple[type[BaseException], ...]:
    """What a failed Spark job raises: PySpark's errors, and py4j's raw JVM
    error where py4j is installed (a Spark Connect client may not have it)."""
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:
        return (PySparkException,)
    return (PySparkException, Py4JJavaError)


def _raise_violation(exc: BaseException) -> None:
    """Turn a job failed by a constraint guard into InvariantViolationError."""
    text = str(exc)
    at = text.find(_VIOLATION_MARK)
    if at < 0:
        return
    message = text[at + len(_VIOLATION_MARK) :].splitlines()[0]
    message = message.split(" SQLSTATE")[0].rstrip(" .\"'")
    raise InvariantViolationError(message) from None


__all__ = [
    "STAGING_PREFIX",
    "WrittenFiles",
    "conform",
    "conform_column",
    "delete_written_files",
    "enforce_constraints",
    "storage_of",
    "table_root_of",
    "write_files",
]
