"""delta-spark's symlink manifests and ours agree, and each keeps the other's current.

delta-spark's ``GENERATE symlink_format_manifest`` on a copy of a table
writes the same manifests as our GENERATE: the same partition folders
(escaped values, the null partition) and the same lines (absolute, decoded
``file:/`` paths). On a table with the property, delta-spark's appends
update the manifests through its own hook, which leaves our record of the
manifests' version behind; our next commit then regenerates them all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.delta import symlink_manifest
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_properties import SYMLINK_FORMAT_MANIFEST
from airflow_delta_provider.operations.alter.plan import SetProperties, alter_table
from tests.symlink_manifests import current, delta_rs_manifests, manifests, remove_partition

VALUES = ["a b", "x:y", None, "100%", "a b", "é", "dropped"]


def _table(root: Path) -> DeltaTable:
    from deltalake import write_deltalake

    for start in (0, len(VALUES)):
        ids = pa.array(range(start, start + len(VALUES)), pa.int64())
        write_deltalake(str(root), pa.table({"id": ids, "p": VALUES}), mode="append", partition_by=["p"])
    return DeltaTable(root)


def _relative(root: Path, found: dict[str, list[str]]) -> dict[str, set[str]]:
    prefix = f"file:{root}/"
    assert all(line.startswith(prefix) for lines in found.values() for line in lines), found
    return {folder: {line[len(prefix) :] for line in lines} for folder, lines in found.items()}


@pytest.mark.timeout(600)
def test_delta_spark_generates_the_manifests_we_generate(delta_spark, tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    table = _table(ours)
    remove_partition(table, "dropped")
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs)
    # A manifest of a partition that is gone: both GENERATEs delete it.
    for root in (ours, theirs):
        stale = root / symlink_manifest.MANIFEST_DIR / "p=gone" / "manifest"
        stale.parent.mkdir(parents=True)
        stale.write_text("file:/nowhere\n")

    symlink_manifest.generate(table, table.snapshot())
    delta_spark.sql(f"GENERATE symlink_format_manifest FOR TABLE {delta_spark.table(str(theirs))}")

    assert _relative(ours, manifests(str(ours))) == _relative(theirs, manifests(str(theirs)))
    assert sorted(manifests(str(ours))) == ["p=100%25", "p=__HIVE_DEFAULT_PARTITION__", "p=a b", "p=x%3Ay", "p=é"]
    assert current(str(ours)) == delta_rs_manifests(str(ours))


@pytest.mark.timeout(600)
def test_delta_spark_and_we_keep_each_others_manifests_current(delta_spark, tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _table(root)
    alter_table(table, SetProperties({SYMLINK_FORMAT_MANIFEST: "true"}))
    remove_partition(table, "x:y")  # ours: the first update after the property is a full generation
    assert current(str(root)) == delta_rs_manifests(str(root))
    assert "p=x%3Ay" not in manifests(str(root))

    delta_spark.sql(f"INSERT INTO {delta_spark.table(str(root))} VALUES (100, 'x:y'), (101, 'new')")
    assert current(str(root)) == delta_rs_manifests(str(root))  # delta-spark's hook kept them current
    assert {"p=x%3Ay", "p=new"} <= set(manifests(str(root)))

    delta_spark.sql(f"DELETE FROM {delta_spark.table(str(root))} WHERE p = 'new'")
    remove_partition(table, "é")  # ours, after delta-spark's commits: a full generation again
    assert current(str(root)) == delta_rs_manifests(str(root))
    assert not {"p=new", "p=é"} & set(manifests(str(root)))
