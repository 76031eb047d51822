"""delta-spark's jar, asked now, gives the Hilbert indices ours give (and
those frozen in tests/spark/write/hilbert_delta_spark.json)."""

from __future__ import annotations

import json
import shutil

import pytest

from airflow_delta_provider.spark.write.hilbert import hilbert_index
from tests.delta_spark.hilbert_vectors import VECTORS, delta_spark_vectors


@pytest.mark.skipif(shutil.which("jshell") is None, reason="asking delta-spark's jar needs jshell (a JDK)")
def test_delta_spark_gives_our_hilbert_indices():
    vectors = delta_spark_vectors()
    assert [[bits, point, index] for bits, point, index in vectors] == json.loads(VECTORS.read_text())
    assert all(hilbert_index(point, bits) == index for bits, point, index in vectors)
