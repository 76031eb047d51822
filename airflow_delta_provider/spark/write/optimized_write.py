"""Optimized writes (``delta.autoOptimize.optimizeWrite``), as delta-spark's
``DeltaOptimizedWriterExec`` does them.

delta-spark shuffles the rows of a write by the table's partition columns
and packs the shuffle blocks of each partition into bins of
``spark.databricks.delta.optimizeWrite.binSize`` (512 MiB), one task (one
file) per bin: each partition gets a few files near the bin size, instead of
one small file per task that held rows of it. Spark's own equivalent does
it here: a ``REBALANCE`` by the partition columns, which adaptive query
execution splits and coalesces into partitions of
``spark.sql.adaptive.advisoryPartitionSizeInBytes``, set for the write to
the bin size: ``delta.targetFileSize`` when the table sets it, else
delta-spark's 512 MiB. As in delta-spark, the bins are measured in shuffle
bytes, so the Parquet files come out smaller (compressed).

Only data writes are rebalanced (APPEND, and the files UPDATE, DELETE and
MERGE write); OPTIMIZE, REORG and change data files are not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

#: delta-spark's ``optimizeWrite.binSize`` default.
DEFAULT_BIN_SIZE = 512 * 1024 * 1024
#: The session setting adaptive query execution sizes a rebalance's partitions by.
ADVISORY_SIZE_CONF = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
#: When true (the default), coalescing ignores the advisory size for parallelism.
PARALLELISM_FIRST_CONF = "spark.sql.adaptive.coalescePartitions.parallelismFirst"


def bin_size(configuration: Mapping[str, str]) -> int:
    """The bytes each written file aims at: ``delta.targetFileSize``, else 512 MiB."""
    return table_properties.parse_byte_size(configuration.get(table_properties.TARGET_FILE_SIZE)) or DEFAULT_BIN_SIZE


def rebalanced(frame: DataFrame, partition_columns: Sequence[str]) -> DataFrame:
    """``frame`` rebalanced by the partition columns; on an unpartitioned table
    (no columns) ``REBALANCE`` spreads the rows round-robin, and adaptive
    execution then splits and coalesces them into partitions of the advisory size.

    The columns go as quoted Column objects: a hint's string parameters are
    parsed as multi-part names, so a physical name like ``col-<uuid>`` (column
    mapping), a dot or a space would not resolve."""
    return frame.hint("rebalance", *[F.col(quote_identifier(name)) for name in partition_columns])


@contextmanager
def advisory_size(spark: SparkSession, size: int) -> Iterator[None]:
    """Adaptive execution sizes partitions at ``size`` bytes while the write
    runs (coalescing small ones up to it, not only to keep every core busy)."""
    wanted = {ADVISORY_SIZE_CONF: str(size), PARALLELISM_FIRST_CONF: "false"}
    before = {key: spark.conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


__all__ = ["DEFAULT_BIN_SIZE", "advisory_size", "bin_size", "rebalanced"]
