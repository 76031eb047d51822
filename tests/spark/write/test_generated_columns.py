"""Tests for spark/generated.py: identity values unique across partitions
(also where the frame has no RDD to count them, as over Spark Connect), and
generated columns filled only where asked."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkNotImplementedError
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_delta_provider.delta.table_features.identity_columns import Identity
from airflow_delta_provider.spark.write import generated_columns as generated


@pytest.mark.parametrize("has_rdd", [True, False])
def test_identity_values_are_unique_on_the_start_and_step_grid(spark, monkeypatch, has_rdd):
    if not has_rdd:

        def no_rdd(self):
            raise PySparkNotImplementedError(errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "rdd"})

        monkeypatch.setattr(DataFrame, "rdd", property(no_rdd))
    df = spark.range(0, 50, numPartitions=4).withColumnRenamed("id", "n")
    ident = Identity("id", 7, -2, 9, False)  # the next values: 7, 5, 3, ...
    rows = generated.with_identity_values(df, [ident]).collect()
    ids = [r["id"] for r in rows]
    assert len(rows) == 50 and len(set(ids)) == 50
    assert all(i <= 7 and (7 - i) % 2 == 0 for i in ids)


def test_identity_values_only_where_flagged(spark):
    df = spark.range(0, 10, numPartitions=2).select(F.col("id").alias("k"), F.lit(-1).cast("long").alias("id"))
    flag = F.col("k") % 2 == 0
    rows = generated.with_identity_values(df, [Identity("id", 1, 1, None, True)], {"id": flag}).collect()
    assert all((r["id"] == -1) == (r["k"] % 2 == 1) for r in rows)
    assert len({r["id"] for r in rows if r["k"] % 2 == 0}) == 5


def test_fill_generated_where_flagged(spark):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long", "nullable": True, "metadata": {}},
            {"name": "g", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "a * 10"}},
        ],
    }
    df = spark.createDataFrame([(1, None), (2, 99)], "a long, g long")
    out = generated.fill_generated(df, schema, {"g": F.col("a") == 1}).collect()
    assert [(r.a, r.g) for r in out] == [(1, 10), (2, 99)]
    assert set(generated.generated_checks(spark, schema)) == {"g"}
