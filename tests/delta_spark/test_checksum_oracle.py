"""delta-spark validates our version checksums, and we validate its.

With ``spark.databricks.delta.incremental.commit.verify`` on (delta-spark's
own tests run so) a transaction checks its snapshot against the ``.crc``
first, and ``checksum.mismatch.fatal`` makes a mismatch an error. A tampered
copy shows that the check really ran.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import AddFile, Metadata
from airflow_delta_provider.delta.checksum.version_checksum import checksum_name
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
VERIFY = {
    "spark.databricks.delta.incremental.commit.verify": "true",
    "spark.databricks.delta.checksum.mismatch.fatal": "true",
}


def _file(root: Path, ids: list[int]) -> AddFile:
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / name, compression="snappy")
    stats = {
        "numRecords": len(ids),
        "minValues": {"id": min(ids)},
        "maxValues": {"id": max(ids)},
        "nullCount": {"id": 0},
    }
    return AddFile(name, {}, (root / name).stat().st_size, 1, stats=json.dumps(stats))


def _our_table(root: Path) -> DeltaTable:
    root.mkdir(parents=True)
    table = DeltaTable(root)
    txn = table.transaction("CREATE TABLE", {}, None)
    txn.update_metadata(Metadata.new(SCHEMA, (), {}, created_time=1))
    txn.add(_file(root, [1, 2]))
    txn.commit()
    txn = table.transaction("WRITE", {"mode": "Append"}, table.snapshot())
    txn.add(_file(root, [3]))
    txn.commit()
    return table


@pytest.mark.timeout(600)
def test_delta_spark_accepts_our_checksums_and_we_accept_its(delta_spark, tmp_path: Path) -> None:
    root = tmp_path / "ours"
    _our_table(root)
    assert (root / "_delta_log" / checksum_name(1)).exists()
    tampered = tmp_path / "tampered"
    shutil.copytree(root, tampered)
    crc = json.loads((tampered / "_delta_log" / checksum_name(1)).read_text())
    crc["tableSizeBytes"] += 1
    (tampered / "_delta_log" / checksum_name(1)).write_text(json.dumps(crc))

    for key, value in VERIFY.items():
        delta_spark.session.conf.set(key, value)
    try:
        delta_spark.sql(f"INSERT INTO delta.`{root}` VALUES (10)")  # validates version 1 against our .crc
        assert sorted(r[0] for r in delta_spark.sql(f"SELECT id FROM delta.`{root}`")) == [1, 2, 3, 10]
        with pytest.raises(Exception, match=r"(?i)integrity|checksum"):
            delta_spark.sql(f"INSERT INTO delta.`{tampered}` VALUES (10)")
    finally:
        for key in VERIFY:
            delta_spark.session.conf.unset(key)
    # delta-spark's own checksum of version 2 (derived from ours) agrees with our replay.
    assert (root / "_delta_log" / checksum_name(2)).exists()
    snap = DeltaTable(root).snapshot()
    assert snap.version == 2 and snap.segment.checksum is not None
    assert snap.num_files == 3
