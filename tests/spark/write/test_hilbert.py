"""The Hilbert key of liquid clustering: a curve whose every step moves to an
adjacent cell, delta-spark's own curve, computed in Spark as the pure-Python
index computes it."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from airflow_delta_provider.spark.write.hilbert import hilbert_index, with_hilbert_key
from airflow_delta_provider.spark.write.zorder import with_range_ids, with_zorder_key


@pytest.mark.parametrize(("dimensions", "bits"), [(2, 1), (2, 4), (3, 3), (4, 2)])
def test_the_curve_visits_every_cell_once_each_step_to_a_neighbour(dimensions, bits):
    cells = list(itertools.product(range(1 << bits), repeat=dimensions))
    by_index = sorted(cells, key=lambda p: hilbert_index(p, bits))

    assert sorted(hilbert_index(p, bits) for p in cells) == list(range(len(cells)))
    for a, b in itertools.pairwise(by_index):
        assert sum(abs(x - y) for x, y in zip(a, b)) == 1, (a, b)  # a Z-order curve jumps; a Hilbert curve never


def test_the_index_is_delta_sparks():
    """600 points in 2, 3 and 4 dimensions, with the index delta-spark's
    ``HilbertIndex`` gives each (tests/delta_spark/hilbert_vectors.py asked
    its jar; tests/delta_spark/test_hilbert_oracle.py asks again)."""
    vectors = json.loads((Path(__file__).parent / "hilbert_delta_spark.json").read_text())
    assert {len(point) for _bits, point, _index in vectors} == {2, 3, 4}
    wrong = [
        (point, index, hilbert_index(point, bits))
        for bits, point, index in vectors
        if hilbert_index(point, bits) != index
    ]
    assert wrong == []


def test_spark_computes_the_index_of_the_range_ids(spark):
    rng = random.Random(11)
    rows = [(rng.randrange(10_000), rng.randrange(500), f"s{rng.randrange(90)}") for _ in range(2000)]
    frame = spark.createDataFrame(rows, "x long, y int, s string")
    columns = ["x", "y", "s"]

    ranked, ranks, bits = with_range_ids(frame, columns)
    expected = {(r.x, r.y, r.s): hilbert_index([r[c] for c in ranks], bits) for r in ranked.collect()}
    got = {(r.x, r.y, r.s): r.key for r in with_hilbert_key(frame, columns, "key").collect()}

    assert got == expected
    assert len(set(got.values())) > 1000  # the strings' byte prefixes order them too


def test_one_column_falls_back_to_its_range_id_as_delta_spark_does(spark):
    frame = spark.createDataFrame([(i,) for i in range(300)], "x long")
    hilbert = sorted((r.x, r.key) for r in with_hilbert_key(frame, ["x"], "key").collect())
    zorder = sorted((r.x, r.key) for r in with_zorder_key(frame, ["x"], "key").collect())
    assert hilbert == zorder
