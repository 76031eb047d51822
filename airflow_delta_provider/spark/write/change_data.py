"""Change data in the Spark engine: the ``cdc`` files a command writes.

UPDATE, DELETE and MERGE on a table with ``delta.enableChangeDataFeed``
hand their changed rows, with a ``_change_type`` column, to
:func:`write_change_files`, which writes them under ``_change_data/``
(partitioned as the table is, physical names under column mapping) and
returns the ``cdc`` actions their commit lists, as delta-spark's commands
do. :func:`tagged`, :func:`update_images` and :func:`with_change_type`
build those rows.

Reading the changes of a version range back is
:mod:`airflow_delta_provider.spark.read.table_changes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.actions.model import AddCDCFile
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.table_features.change_data_feed import (
    CHANGE_TYPE_COLUMN,
    UPDATE_POSTIMAGE,
    UPDATE_PREIMAGE,
)
from airflow_delta_provider.spark.read.files import column, free_name, spark_schema


def write_change_files(frame: DataFrame, snapshot: Any, io: str, schema: Any, metadata: Any) -> list[AddCDCFile]:
    """Write ``frame`` (the table's columns and ``_change_type``) as change
    data files of ``snapshot``'s table, whose commit leaves ``schema`` and
    ``metadata``; their ``cdc`` actions."""
    from airflow_delta_provider.spark.write.files import write_files

    written = write_files(
        frame,
        snapshot,
        schema,
        snapshot.partition_columns,
        configuration=dict(metadata.configuration),
        io=io,
        change_data=True,
    )
    return [AddCDCFile(path=f.path, partition_values=f.partition_values, size=f.size) for f in written]


def tagged(columns: list[Column], change_type: str) -> Column:
    """One change row: ``columns`` (the table's, in order, aliased) and its ``_change_type``."""
    return F.struct(*columns, F.lit(change_type).alias(CHANGE_TYPE_COLUMN))


def update_images(frame: DataFrame, schema: Mapping[str, Any], updated: list[Column]) -> DataFrame:
    """The pre- and post-image of each row of ``frame`` (rows being updated,
    with the table's columns), ``updated`` giving the new values: two change
    rows per row, from one read of ``frame``."""
    struct = spark_schema(dict(schema))
    before = [column(f.name).alias(f.name) for f in struct.fields]
    after = [col.cast(f.dataType).alias(f.name) for col, f in zip(updated, struct.fields)]
    images = F.array(tagged(before, UPDATE_PREIMAGE), tagged(after, UPDATE_POSTIMAGE))
    name = free_name("_change", {c.lower() for c in frame.columns})
    return frame.select(F.explode(images).alias(name)).select(f"{quote_identifier(name)}.*")


def with_change_type(frame: DataFrame, change_type: str) -> DataFrame:
    """``frame``'s rows tagged as ``change_type`` changes."""
    return frame.withColumn(CHANGE_TYPE_COLUMN, F.lit(change_type))


__all__ = ["tagged", "update_images", "with_change_type", "write_change_files"]
