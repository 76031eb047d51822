"""Hilbert curve: the sort key of liquid clustering over more than one column.

As delta-spark's ``HilbertClustering`` (``MultiDimClustering``): each column's
values become a range id (:func:`~.zorder.with_range_ids`, shared with
Z-order), and the key is the index of the point of range ids on a Hilbert
curve of ``bits`` levels (delta-spark's ``hilbert_index(numBits, rangeIds)``).
One column needs no curve: its range id is the key, as delta-spark falls back
to ``ZOrderClustering`` for one column. A Hilbert curve keeps every two
consecutive cells adjacent, so the files cut from its order hold tighter
boxes than a Z-order's, which jumps.

delta-spark walks precomputed state tables (``HilbertStates``) one level at a
time; so does this module, with the tables of Hamilton's compact Hilbert index
("Compact Hilbert Indices", 2006) computed once here (:func:`state_tables`),
and each level one projection of native Spark expressions (an array lookup by
state and cell), like Z-order's range ids: no Python UDF runs per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.spark.write.zorder import with_range_ids, with_zorder_key


def _gray(i: int) -> int:
    return i ^ (i >> 1)


def _trailing_ones(i: int) -> int:
    count = 0
    while i & 1:
        i >>= 1
        count += 1
    return count


def _rotate_right(x: int, r: int, n: int) -> int:
    r %= n
    return ((x >> r) | (x << (n - r))) & ((1 << n) - 1)


def _rotate_left(x: int, r: int, n: int) -> int:
    return _rotate_right(x, n - r % n, n)


def _entry(w: int) -> int:
    return 0 if w == 0 else _gray(2 * ((w - 1) // 2))


def _direction(w: int, n: int) -> int:
    if w == 0:
        return 0
    return (_trailing_ones(w - 1) if w % 2 == 0 else _trailing_ones(w)) % n


def _gray_inverse(g: int) -> int:
    i = 0
    while g:
        i ^= g
        g >>= 1
    return i


@cache
def state_tables(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """For ``n`` dimensions, indexed by ``state * 2**n + cell`` (a state is an
    entry corner ``e`` and direction ``d``: ``e * n + d``; a cell holds bit
    ``j`` of dimension ``j``): the cell's ``n`` bits of the Hilbert index, and
    the state of the next level down."""
    cells = 1 << n
    digits, following = [], []
    for e in range(cells):
        for d in range(n):
            for cell in range(cells):
                w = _gray_inverse(_rotate_right(cell ^ e, d + 1, n))
                e2 = e ^ _rotate_left(_entry(w), d + 1, n)
                d2 = (d + _direction(w, n) + 1) % n
                digits.append(w)
                following.append(e2 * n + d2)
    return tuple(digits), tuple(following)


def hilbert_index(point: Sequence[int], bits: int) -> int:
    """The Hilbert index of ``point`` (each coordinate below ``2**bits``): what
    :func:`with_hilbert_key` computes in Spark, for tests and small inputs."""
    n = len(point)
    digits, following = state_tables(n)
    state, index = 0, 0
    for level in range(bits - 1, -1, -1):
        cell = sum(((p >> level) & 1) << j for j, p in enumerate(point))
        at = state * (1 << n) + cell
        index = (index << n) | digits[at]
        state = following[at]
    return index


def with_hilbert_key(frame: DataFrame, columns: Sequence[str], name: str) -> DataFrame:
    """``frame`` with a column ``name``: the Hilbert index of its rows' range
    ids over ``columns`` (a long), or the range id alone for one column.
    Runs one quantile job."""
    if len(columns) == 1:
        return with_zorder_key(frame, columns, name)
    frame, ranks, bits = with_range_ids(frame, columns)
    n = len(ranks)
    digits, following = state_tables(n)
    digit_table = F.array(*[F.lit(v) for v in digits])
    state_table = F.array(*[F.lit(v) for v in following])
    state = "__hilbert_state"
    frame = frame.withColumn(state, F.lit(0)).withColumn(name, F.lit(0).cast("long"))
    for level in range(bits - 1, -1, -1):
        cell = sum(
            (
                F.shiftleft(F.shiftright(F.col(r), level).bitwiseAND(F.lit(1).cast("long")), j)
                for j, r in enumerate(ranks)
            ),
            F.lit(0).cast("long"),
        )
        at = (F.col(state) * F.lit(1 << n) + cell).cast("int") + 1  # element_at counts from 1
        frame = frame.withColumn(
            name, F.shiftleft(F.col(name), n) + F.element_at(digit_table, at).cast("long")
        ).withColumn(state, F.element_at(state_table, at))
    return frame.drop(state, *ranks)


__all__ = ["hilbert_index", "state_tables", "with_hilbert_key"]
