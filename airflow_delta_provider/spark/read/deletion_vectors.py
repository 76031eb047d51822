"""Deletion vectors in the Spark engine: leaving deleted rows out of a read,
and grouping the row indexes a DELETE or UPDATE marks by file.

A row of a data file is identified by the file and its *row index*, its
position in the parquet file, which Spark 4 reads as
``_metadata.row_index`` (``hadoop`` I/O) and the ``arrow`` source computes
from the row groups it reads (:mod:`.arrow_source`).

- :func:`drop_deleted_rows` removes the rows a file's vector deletes from a
  ``hadoop`` read: the deleted ``(file key, row index)`` pairs, decoded in the
  driver from the vectors (:mod:`airflow_delta_provider.delta.actions.deletion_vectors`),
  are a small frame that the read is anti-joined with, broadcast. No Python
  runs per row; the file key is a long (``xxhash64`` of Spark's file path,
  :func:`~.files.file_keys`), as in the touched-file count.
- :func:`row_indexes_by_file` turns the (file key, row index) pairs of the
  live rows that match a condition (:func:`~.file_reads.match_frame`, one
  Spark job reading the condition's columns, the file key and the row
  index) into sorted row indexes per file; only the matching pairs reach
  the driver. :func:`~.file_reads.matching_row_indexes` does both steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.spark.read.files import file_keys, key_column

#: Above this many deleted rows in one read, the deleted-rows frame is no longer
#: forced into a broadcast (Spark's planner decides).
BROADCAST_MAX_ROWS = 5_000_000


def drop_deleted_rows(
    read: DataFrame,
    uri_column: str,
    row_index_column: str,
    files: Sequence[AddFile],
    uris: dict[str, str],
    snapshot: Any,
) -> DataFrame:
    """``read`` (carrying each row's Spark file URI and row index in the two
    named columns) without the rows the files' deletion vectors delete.
    ``uris`` maps each file's Spark URI to its ``add.path``."""
    marked = [f for f in files if f.deletion_vector is not None]
    if not marked:
        return read
    import pyarrow as pa

    by_path = {path: uri for uri, path in uris.items()}
    keys, hashed = file_keys(uris)
    key_of = {path: key for key, path in keys.items()}
    key_arrays, row_arrays = [], []
    for f in marked:
        rows = snapshot.deleted_rows(f)
        indexes = np.asarray(rows.to_array(), dtype=np.int64) if rows is not None else np.empty(0, np.int64)
        key = key_of[f.path] if hashed else by_path[f.path]
        key_arrays.append(pa.repeat(pa.scalar(key, pa.int64() if hashed else pa.string()), len(indexes)))
        row_arrays.append(pa.array(indexes, pa.int64()))
    deleted_rows = sum(len(a) for a in row_arrays)
    key_name, row_name = f"{uri_column}_key", f"{row_index_column}_deleted"
    table = pa.table({key_name: pa.concat_arrays(key_arrays), row_name: pa.concat_arrays(row_arrays)})
    deleted = read.sparkSession.createDataFrame(table)
    if deleted_rows <= BROADCAST_MAX_ROWS:
        deleted = F.broadcast(deleted)
    keyed = read.withColumn(key_name, key_column(uri_column, hashed))
    condition = (keyed[key_name] == deleted[key_name]) & (keyed[row_index_column] == deleted[row_name])
    return keyed.join(deleted, condition, "left_anti").drop(key_name)


def row_indexes_by_file(
    frame: DataFrame, key_name: str, row_name: str, by_key: dict[Any, str]
) -> dict[str, np.ndarray]:
    """Per file (``add.path``), the sorted row indexes in ``frame``
    (:func:`~.file_reads.match_frame`'s); only the
    two columns reach the driver."""
    table = frame.select(quote_identifier(key_name), quote_identifier(row_name)).toArrow()
    keys = table.column(key_name).to_numpy(zero_copy_only=False)
    rows = table.column(row_name).to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    if len(keys) == 0:
        return {}
    order = np.lexsort((rows, keys))
    keys, rows = keys[order], rows[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    out: dict[str, np.ndarray] = {}
    for start, end in zip(starts, ends):
        key = keys[start].item() if hasattr(keys[start], "item") else keys[start]
        path = by_key.get(key)
        if path is None:
            raise DeltaError(f"internal error: Spark read a file that was not asked for (key {key!r})")
        out[path] = rows[start:end]
    return out


__all__ = ["BROADCAST_MAX_ROWS", "drop_deleted_rows", "row_indexes_by_file"]
