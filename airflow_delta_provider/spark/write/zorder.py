"""Z-order: a sort key that keeps rows close in several columns close in the files.

Each column's values become a range id, the number of its approximate
quantiles (``approxQuantile``, one job) below the value, so every range holds
about as many rows; nulls get range 0. The key interleaves the bits of the
range ids (bit ``b`` of column ``i`` goes to bit ``b * k + i``), a Morton code,
as delta-spark's ``interleave_bits(range_partition_id(...))`` does. Everything
is a native Spark expression: no Python UDF runs per row, and it works over
Spark Connect.

Columns must be numeric, dates or timestamps: the types Spark's
``approxQuantile`` orders (OPTIMIZE refuses float and double columns, whose
files carry no min/max).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, NumericType, TimestampNTZType, TimestampType

from airflow_delta_provider.delta.errors import InvalidInputError

#: Bits of the key: a signed long holds 63, shared by the columns.
KEY_BITS = 62
#: Bits of one column's range id at most (256 ranges).
MAX_COLUMN_BITS = 8
#: approxQuantile's relative error. Finer (below the 1/256 spacing of the
#: ranges) evens the ranges out but tripled the quantile job's time, for
#: 12% of files read instead of 18% in bench_optimize.
QUANTILE_ERROR = 0.01


def zorder_types_supported(data_type: DataType) -> bool:
    return isinstance(data_type, (NumericType, DateType, TimestampType, TimestampNTZType))


def _as_number(column: Column, data_type: DataType) -> Column:
    """A value of ``column`` that orders as it does and that approxQuantile takes."""
    if isinstance(data_type, DateType):
        return F.unix_date(column).cast("double")
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return F.unix_micros(column.cast("timestamp")).cast("double")
    return column.cast("double")


def zorder_key(frame: DataFrame, columns: Sequence[str]) -> Column:
    """The Z-order key of ``frame``'s rows over ``columns`` (a long); runs one quantile job."""
    if not columns:
        raise InvalidInputError("Z-order needs at least one column")
    if len(columns) > KEY_BITS:
        raise InvalidInputError(f"Z-order takes at most {KEY_BITS} columns, not {len(columns)}")
    types = {f.name: f.dataType for f in frame.schema.fields}
    numbers = []
    for name in columns:
        if not zorder_types_supported(types[name]):
            raise InvalidInputError(
                f"cannot Z-order by {name}: its type {types[name].simpleString()} has no quantiles "
                "(numeric, date and timestamp columns can be Z-ordered)"
            )
        numbers.append(_as_number(F.col(_quote(name)), types[name]))
    bits = max(1, min(MAX_COLUMN_BITS, KEY_BITS // len(columns)))
    probes = [i / (1 << bits) for i in range(1, 1 << bits)]
    helpers = [f"__zorder_{i}" for i in range(len(columns))]
    quantiles = frame.select(*[n.alias(h) for n, h in zip(numbers, helpers)]).approxQuantile(
        helpers, probes, QUANTILE_ERROR
    )
    range_ids = []
    for number, bounds in zip(numbers, quantiles):
        cuts = sorted(set(bounds))
        if not cuts:  # all null
            range_ids.append(F.lit(0).cast("long"))
            continue
        edges = F.array(*[F.lit(float(c)) for c in cuts])
        range_ids.append(F.size(F.filter(edges, _below(number))).cast("long"))
    key = F.lit(0).cast("long")
    k = len(range_ids)
    for bit in range(bits):
        for i, range_id in enumerate(range_ids):
            key = key + F.shiftleft(F.shiftright(range_id, bit).bitwiseAND(F.lit(1).cast("long")), bit * k + i)
    return key


def _below(value: Column) -> Callable[[Column], Column]:
    """``edge -> edge < value``, for ``F.filter`` (which reads the lambda's parameters)."""
    return lambda edge: edge < value


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


__all__ = ["KEY_BITS", "MAX_COLUMN_BITS", "zorder_key", "zorder_types_supported"]
