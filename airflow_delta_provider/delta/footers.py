"""Which live files a rewrite must touch, told by their Parquet footers.

Two operations decide from the files' own schemas, not from the log:
REORG ... APPLY (PURGE) also rewrites the files that name a column the
table no longer has (delta-spark's ``fileHasExtraColumns``), and DROP
FEATURE typeWidening rewrites the files written before a type change
(``fileHasDifferentTypes``). Footers are read in parallel, each through
:func:`~airflow_delta_provider.delta.partitions.file_storage`, so that a
shallow clone's files (absolute paths into its source) are found too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.partitions import file_storage
from airflow_delta_provider.delta.schema.widening import all_changes
from airflow_delta_provider.delta.table_features.row_tracking import materialized_columns

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.storage import TableStorage

#: Footers read at once (the reads wait on storage, not on the CPU).
FOOTER_READERS = 16


def files_with_extra_columns(storage: TableStorage, snapshot: Snapshot) -> set[str]:
    """The paths (as the log spells them) of the live files whose footer names
    a top-level column that the table's physical schema (and its materialized
    row-tracking columns) do not: delta-spark's ``fileHasExtraColumns``."""
    known = {f["name"].lower() for f in snapshot.column_mapping.physical_schema()["fields"]}
    known.update(name.lower() for name in materialized_columns(snapshot.metadata) or ())

    def extra(schema: pa.Schema) -> bool:
        return any(name.lower() not in known for name in schema.names)

    return {f.path for f in _matching(storage, snapshot.files, extra)}


def files_with_narrower_types(storage: TableStorage, snapshot: Snapshot) -> list[AddFile]:
    """The live files whose Parquet type of a column that records a type
    change differs from the table's: the files written before the change,
    which dropping ``typeWidening`` rewrites (delta-spark's
    ``fileHasDifferentTypes``, checked on the widened columns only)."""
    from airflow_delta_provider.delta.schema.arrow import to_arrow_type

    widened = {path[0] for path, _change in all_changes(snapshot.schema)}
    if not widened:
        return []
    logical = snapshot.schema["fields"]
    physical = snapshot.column_mapping.physical_schema()["fields"]
    wanted = {
        p["name"].lower(): _leaf_types(to_arrow_type(p["type"]))
        for f, p in zip(logical, physical, strict=True)
        if f["name"] in widened
    }

    def narrower(schema: pa.Schema) -> bool:
        for field in schema:
            table_leaves = wanted.get(field.name.lower())
            if table_leaves is None:
                continue
            file_leaves = _leaf_types(field.type)
            if any(file_leaves.get(k, v) != v for k, v in table_leaves.items()):
                return True
        return False

    return _matching(storage, snapshot.files, narrower)


def _matching(storage: TableStorage, files: Iterable[AddFile], test: Callable[[pa.Schema], bool]) -> list[AddFile]:
    """The ``files`` whose footer schema passes ``test``, in their order."""
    import pyarrow.parquet as pq

    def check(add: AddFile) -> bool:
        holder, rel = file_storage(storage, add.path)
        with holder.open_input_file(rel) as fh:
            return test(pq.read_schema(fh))

    listed = list(files)
    with ThreadPoolExecutor(max_workers=FOOTER_READERS) as pool:
        return [f for f, hit in zip(listed, pool.map(check, listed), strict=True) if hit]


def _leaf_types(arrow_type: pa.DataType, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Each primitive leaf of ``arrow_type`` by its path, as its Delta type name."""
    import pyarrow as pa

    from airflow_delta_provider.delta.schema.arrow import from_arrow_type

    if pa.types.is_struct(arrow_type):
        out: dict[tuple[str, ...], str] = {}
        for i in range(arrow_type.num_fields):
            child = arrow_type.field(i)
            out.update(_leaf_types(child.type, (*path, child.name.lower())))
        return out
    if pa.types.is_map(arrow_type):
        keys = _leaf_types(arrow_type.key_type, (*path, "key"))
        return {**keys, **_leaf_types(arrow_type.item_type, (*path, "value"))}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _leaf_types(arrow_type.value_type, (*path, "element"))
    try:
        return {path: str(from_arrow_type(arrow_type))}
    except InvalidInputError:  # a type with no Delta equivalent: not compared
        return {}


__all__ = ["FOOTER_READERS", "files_with_extra_columns", "files_with_narrower_types"]
