"""Z-order: a sort key that keeps rows close in several columns close in the files.

Each column's values become a range id, the number of its approximate
quantiles (``approxQuantile``, one job) below the value, so every range holds
about as many rows; nulls get range 0. The key interleaves the bits of the
range ids (bit ``b`` of column ``i`` goes to bit ``b * k + i``), a Morton code,
as delta-spark's ``interleave_bits(range_partition_id(...))`` does. Everything
is a native Spark expression: no Python UDF runs per row, and it works over
Spark Connect.

The range id is found by a binary search over the sorted quantiles, one
projection per step (:func:`_with_rank`): eight array lookups a row for 256
ranges, all in generated code. (A higher-order ``filter`` over the quantiles
compared all of them, interpreted; a ``CASE WHEN`` tree of 255 branches is
too large for Spark's code generation. Either made Z-order 1.2 to 1.6 times
slower than delta-spark's on 2 million rows.)

Columns must be numeric, dates, timestamps or strings: a number that orders as
the value does goes to Spark's ``approxQuantile`` (a string's first
:data:`STRING_PREFIX_BYTES` bytes; OPTIMIZE refuses float and double columns,
whose files carry no min/max).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, NumericType, StringType, TimestampNTZType, TimestampType

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

#: Bits of the key: a signed long holds 63, shared by the columns.
KEY_BITS = 62
#: Bits of one column's range id at most (256 ranges).
MAX_COLUMN_BITS = 8
#: approxQuantile's relative error. Finer (below the 1/256 spacing of the
#: ranges) evens the ranges out but tripled the quantile job's time, for
#: 12% of files read instead of 18% in bench_optimize.
QUANTILE_ERROR = 0.01
#: A string orders by its first bytes for its range id (strings that share them share a range).
STRING_PREFIX_BYTES = 7


def zorder_types_supported(data_type: DataType) -> bool:
    return isinstance(data_type, (NumericType, DateType, TimestampType, TimestampNTZType, StringType))


def _as_number(column: Column, data_type: DataType) -> Column:
    """A value of ``column`` that orders as it does and that approxQuantile takes."""
    if isinstance(data_type, DateType):
        return F.unix_date(column).cast("double")
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return F.unix_micros(column.cast("timestamp")).cast("double")
    if isinstance(
        data_type, StringType
    ):  # its first STRING_PREFIX_BYTES bytes, big-endian: Spark orders strings by bytes
        prefix = F.hex(F.substring(column.cast("binary"), 1, STRING_PREFIX_BYTES))
        return F.conv(F.rpad(prefix, 2 * STRING_PREFIX_BYTES, "0"), 16, 10).cast("double")
    return column.cast("double")


def with_zorder_key(frame: DataFrame, columns: Sequence[str], name: str) -> DataFrame:
    """``frame`` with a column ``name``: the Z-order key of its rows over
    ``columns`` (a long). Runs one quantile job."""
    frame, ranks, bits = with_range_ids(frame, columns)
    key = F.lit(0).cast("long")
    k = len(ranks)
    for bit in range(bits):
        for i, rank in enumerate(ranks):
            key = key + F.shiftleft(F.shiftright(F.col(rank), bit).bitwiseAND(F.lit(1).cast("long")), bit * k + i)
    return frame.withColumn(name, key).drop(*ranks)


def with_range_ids(frame: DataFrame, columns: Sequence[str]) -> tuple[DataFrame, list[str], int]:
    """``frame`` with each column's range id (delta-spark's ``range_partition_id``):
    the frame, the range id columns (longs of ``bits`` bits, in the order of
    ``columns``) and ``bits``. Runs one quantile job."""
    if not columns:
        raise InvalidInputError("Z-order needs at least one column")
    if len(columns) > KEY_BITS:
        raise InvalidInputError(f"Z-order takes at most {KEY_BITS} columns, not {len(columns)}")
    types = {f.name: f.dataType for f in frame.schema.fields}
    values = [f"__zorder_value_{i}" for i in range(len(columns))]
    ranks = [f"__zorder_rank_{i}" for i in range(len(columns))]
    for column, value in zip(columns, values):
        if not zorder_types_supported(types[column]):
            raise InvalidInputError(
                f"cannot Z-order by {column}: its type {types[column].simpleString()} has no quantiles "
                "(numeric, date, timestamp and string columns can be Z-ordered)"
            )
        frame = frame.withColumn(value, _as_number(F.col(quote_identifier(column)), types[column]))
    bits = max(1, min(MAX_COLUMN_BITS, KEY_BITS // len(columns)))
    probes = [i / (1 << bits) for i in range(1, 1 << bits)]
    quantiles = frame.approxQuantile(values, probes, QUANTILE_ERROR)
    for value, rank, bounds in zip(values, ranks, quantiles):
        frame = _with_rank(frame, value, sorted(set(bounds)), bits, rank)
    return frame.drop(*values), ranks, bits


def _with_rank(frame: DataFrame, value: str, cuts: Sequence[float], bits: int, rank: str) -> DataFrame:
    """``frame`` with a column ``rank``: how many of the sorted ``cuts`` (at
    most ``2**bits - 1``) lie below column ``value``.

    A binary search by halving steps, each a projection that reads the rank
    so far (so no step repeats the ones before it): add ``step`` when the cut
    just past it is below the value. Cuts are padded with +infinity to
    ``2**bits``. A null value ranks 0; NaN, which Spark orders above every
    number, ranks last.
    """
    size = 1 << bits
    if len(cuts) >= size:
        raise ValueError(f"{len(cuts)} cuts do not fit {bits} bits")
    padded = F.array(*[F.lit(float(c)) for c in [*cuts, *[math.inf] * (size - len(cuts))]])
    frame = frame.withColumn(rank, F.lit(0).cast("long"))
    step = size // 2
    while step >= 1:
        below = F.element_at(padded, F.col(rank).cast("int") + step) < F.col(value)
        frame = frame.withColumn(rank, F.col(rank) + F.when(below, F.lit(step).cast("long")).otherwise(0))
        step //= 2
    return frame


__all__ = ["KEY_BITS", "MAX_COLUMN_BITS", "with_range_ids", "with_zorder_key", "zorder_types_supported"]
