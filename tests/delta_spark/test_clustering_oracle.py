"""delta-spark reads the liquid-clustered tables we write, and sees their
clustering columns; its OPTIMIZE then keeps clustering them, and ours reads
its files as clustered."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering
from tests.operations.runs import run_append, run_optimize


def test_delta_spark_reads_our_clustered_table_and_clusters_it_on(delta_spark, spark, tmp_path):
    rng = random.Random(4)
    data = pa.table(
        {
            "id": pa.array(range(200), pa.int64()),
            "x": pa.array([rng.randrange(1000) for _ in range(200)], pa.int64()),
            "y": [f"k{rng.randrange(50):02d}" for _ in range(200)],
        }
    )
    (tmp_path / "src").mkdir()
    pq.write_table(data, tmp_path / "src" / "part-0.parquet")
    table = str(tmp_path / "t")
    run_append(spark, table, str(tmp_path / "src"), format="parquet", cluster_by=["x", "y"])
    run_optimize(spark, table, full=True)

    detail = delta_spark.detail(table)
    assert detail["clusteringColumns"] == ["x", "y"]
    assert {"clustering", "domainMetadata"} <= set(detail["tableFeatures"])
    assert sorted(delta_spark.rows(table)) == sorted(zip(*data.to_pydict().values()))

    delta_spark.sql(f"INSERT INTO {delta_spark.table(table)} VALUES (1000, 5, 'k99')")
    delta_spark.sql(f"OPTIMIZE {delta_spark.table(table)}")
    files = DeltaTable(table).snapshot().files
    assert all(clustering.is_clustered_by(f, ["x", "y"]) for f in files)  # delta-spark's tags are ours
    assert DeltaTable(table).snapshot().num_records == 201
