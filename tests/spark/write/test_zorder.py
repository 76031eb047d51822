"""The Z-order key: range ids by binary search, interleaved bits."""

from __future__ import annotations

import bisect
import random

import pytest

from airflow_delta_provider.spark.write.zorder import _with_rank, with_zorder_key


def test_rank_counts_the_cuts_below_each_value(spark):
    rng = random.Random(5)
    cuts = sorted({rng.uniform(-100, 100) for _ in range(255)})
    values = [rng.uniform(-120, 120) for _ in range(500)] + cuts + [cuts[0] - 1, cuts[-1] + 1, None, float("nan")]
    frame = spark.createDataFrame([(v,) for v in values], "v double")
    for row in _with_rank(frame, "v", cuts, 8, "rank").collect():
        if row.v is None:
            expected = 0
        elif row.v != row.v:  # NaN: Spark orders it above every number
            expected = len(cuts)
        else:
            expected = bisect.bisect_left(cuts, row.v)
        assert row.rank == expected, row


@pytest.mark.parametrize(
    ("cuts", "bits", "expected"), [([1.0], 1, [0, 0, 1]), ([], 1, [0, 0, 0]), ([0.7, 1.5], 2, [0, 1, 2])]
)
def test_rank_of_few_cuts(spark, cuts, bits, expected):
    frame = spark.createDataFrame([(0.5,), (1.0,), (2.0,)], "v double")
    assert [r.rank for r in _with_rank(frame, "v", cuts, bits, "rank").collect()] == expected


def test_the_key_interleaves_the_range_ids(spark):
    """With two columns of 4 distinct values in 4 ranges each, the key is the
    Morton code of (rank of x, rank of y): bit b of x at 2b, of y at 2b + 1."""
    rows = [(x, y) for x in range(4) for y in range(4)] * 50
    frame = spark.createDataFrame(rows, "x long, y long")
    keyed = with_zorder_key(frame, ["x", "y"], "key")
    assert keyed.columns == ["x", "y", "key"]

    def morton(x: int, y: int) -> int:
        return sum(((x >> b) & 1) << (2 * b) | ((y >> b) & 1) << (2 * b + 1) for b in range(31))

    got = {(r.x, r.y): r.key for r in keyed.distinct().collect()}
    # Quantiles of 4 evenly spread values put each value in its own range: rank(v) == v.
    assert got == {(x, y): morton(x, y) for x in range(4) for y in range(4)}
