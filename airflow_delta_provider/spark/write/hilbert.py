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
time; so does this module, with delta-spark's own tables, generated as its
``HilbertIndex.getStateGenerator`` does (:func:`state_tables`), so that the
index is delta-spark's; each level is one projection of native Spark
expressions (an array lookup by state and cell), like Z-order's range ids: no
Python UDF runs per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.spark.write.zorder import with_range_ids, with_zorder_key


def _rotate_left(x: int, r: int, n: int) -> int:
    return ((x << r) | (x >> (n - r))) & ((1 << n) - 1)


def _rotate_right(x: int, r: int, n: int) -> int:
    return ((x >> r) | (x << (n - r))) & ((1 << n) - 1)


@dataclass(frozen=True)
class _Matrix:
    """delta-spark's ``HilbertMatrix``: a reflection (``x2``) and a rotation (``dy``) of the cells."""

    n: int
    x2: int
    dy: int

    def transform(self, e: int) -> int:
        return _rotate_left(e ^ self.x2, self.dy, self.n)

    def multiply(self, other: _Matrix) -> _Matrix:
        return _Matrix(self.n, _rotate_right(self.x2, other.dy, self.n) ^ other.x2, (self.dy + other.dy) % self.n)


def _x2_gray_codes(n: int) -> list[int]:
    """delta-spark's ``getX2GrayCodes``: the first and last points of each
    sub-curve of the second-order curve."""
    if n == 1:
        return [0, 1, 0, 1]
    mask = 1 << (n - 1)
    base = _x2_gray_codes(n - 1)
    base[-1] = base[-2] + mask
    return base + [code ^ mask for code in reversed(base)]


@cache
def state_tables(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """For ``n`` dimensions, indexed by ``state * 2**n + cell`` (a cell holds
    bit ``n - 1 - j`` of dimension ``j``): the cell's ``n`` bits of the Hilbert
    index, and the state of the next level down. The states are delta-spark's
    (``HilbertIndex.getStateGenerator(n).generateStateList()``), so the index
    is delta-spark's ``hilbert_index``."""
    cells = 1 << n
    x2s = _x2_gray_codes(n)
    rows = []  # (y, x1, matrix) of the first-order curve
    for y in range(cells):
        dy = x2s[2 * y] ^ x2s[2 * y + 1]
        set_column = n - 1 - ((dy & -dy).bit_length() - 1)
        rows.append((y, y ^ (y >> 1), _Matrix(n, x2s[2 * y], set_column)))
    matrices: list[_Matrix] = [_Matrix(n, 0, 0)]  # state id -> its matrix; 0 is the identity
    ids: dict[_Matrix, int] = {matrices[0]: 0}

    def state_of(matrix: _Matrix) -> int:
        if matrix not in ids:
            ids[matrix] = len(matrices)
            matrices.append(matrix)
        return ids[matrix]

    initial = {x1: (y, state_of(m)) for y, x1, m in rows}  # cell -> (index digits, next state)
    table = [initial]
    while len(table) < len(matrices):  # each new state in the order found, as delta-spark's queue
        current = matrices[len(table)]
        row = {}
        for i in range(cells):
            y, then = initial[current.transform(i)]
            row[i] = (y, state_of(matrices[then].multiply(current)))
        table.append(row)
    digits = tuple(state[c][0] for state in table for c in range(cells))
    following = tuple(state[c][1] for state in table for c in range(cells))
    return digits, following


def _cell(point: Sequence[int], level: int) -> int:
    n = len(point)
    return sum(((p >> level) & 1) << (n - 1 - j) for j, p in enumerate(point))


def hilbert_index(point: Sequence[int], bits: int) -> int:
    """The Hilbert index of ``point`` (each coordinate below ``2**bits``): what
    :func:`with_hilbert_key` computes in Spark, for tests and small inputs."""
    n = len(point)
    digits, following = state_tables(n)
    state, index = 0, 0
    for level in range(bits - 1, -1, -1):
        at = state * (1 << n) + _cell(point, level)
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
                F.shiftleft(F.shiftright(F.col(r), level).bitwiseAND(F.lit(1).cast("long")), n - 1 - j)
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
