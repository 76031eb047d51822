"""GENERATE symlink_format_manifest as a command, and the manifests our Spark
commands keep current on a table with
``delta.compatibility.symlinkFormatManifest.enabled``: after APPEND (which
creates the table), UPDATE, DELETE (a partition emptied loses its
manifest), MERGE and OPTIMIZE, each partition's manifest lists exactly the
files delta-rs reads for it. Deletion vectors left by a DELETE stop the
property and GENERATE, with nothing committed or written."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import SymlinkManifestUnsupportedError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_properties import SYMLINK_FORMAT_MANIFEST
from tests.operations.runs import run_alter, run_append, run_delete, run_generate, run_merge, run_optimize, run_update
from tests.symlink_manifests import current, delta_rs_manifests, manifests

ENABLED = {SYMLINK_FORMAT_MANIFEST: "true"}


def _source(folder, ids, p) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{ids[0]}.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": [str(i) for i in ids], "p": p}), path)
    return str(folder)


def test_every_command_keeps_the_manifests_of_the_partitions_it_touches(spark, tmp_path) -> None:
    table = str(tmp_path / "t")
    run_append(spark, table, _source(tmp_path / "s0", [1, 2, 3, 4], ["a", "a", "b", "c"]),
               partition_by=["p"], table_properties=ENABLED)  # fmt: skip
    run_append(spark, table, _source(tmp_path / "s1", [5, 6], ["a", "b"]))
    assert sorted(manifests(table)) == ["p=a", "p=b", "p=c"]
    assert current(table) == delta_rs_manifests(table)

    steps = [
        ("UPDATE", lambda: run_update(spark, table, "id = 1", {"v": "'one'"})),
        ("DELETE", lambda: run_delete(spark, table, "p = 'b'")),
        (
            "MERGE",
            lambda: run_merge(
                spark,
                table,
                _source(tmp_path / "m", [4, 7], ["c", "d"]),
                "t.id = s.id",
                [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}],
            ),
        ),
        ("OPTIMIZE", lambda: run_optimize(spark, table)),
    ]
    for operation, run in steps:
        result = run()
        assert result.version is not None, operation
        assert current(table) == delta_rs_manifests(table), operation
    assert sorted(manifests(table)) == ["p=a", "p=c", "p=d"]  # "b" was emptied by the DELETE
    assert len(manifests(table)["p=a"]) == 1  # OPTIMIZE compacted "a"'s files
    state = json.loads((tmp_path / "t" / "_symlink_format_manifest" / "_last_generated.json").read_text())
    assert state["version"] == DeltaTable(table).latest_version()


def test_deletion_vectors_stop_the_property_and_generate(spark, tmp_path) -> None:
    table = str(tmp_path / "t")
    run_append(spark, table, _source(tmp_path / "s", [1, 2, 3], ["a", "a", "b"]), partition_by=["p"],
               table_properties={"delta.enableDeletionVectors": "true"})  # fmt: skip
    run_delete(spark, table, "id = 1")  # a deletion vector on the file of "a"
    assert any(f.deletion_vector for f in DeltaTable(table).snapshot().files)
    version = DeltaTable(table).latest_version()

    with pytest.raises(SymlinkManifestUnsupportedError, match="enableDeletionVectors"):
        run_alter(None, table, {"set_properties": ENABLED})
    run_alter(None, table, {"set_properties": {"delta.enableDeletionVectors": "false"}})
    with pytest.raises(SymlinkManifestUnsupportedError, match="has a deletion vector"):
        run_alter(None, table, {"set_properties": ENABLED})
    with pytest.raises(SymlinkManifestUnsupportedError, match="has a deletion vector"):
        run_generate(None, table)
    assert DeltaTable(table).latest_version() == version + 1  # only the switch-off
    assert not (tmp_path / "t" / "_symlink_format_manifest").exists()


def test_run_generate_needs_no_session_and_the_cli_runs_it(tmp_path) -> None:
    from deltalake import write_deltalake

    table = str(tmp_path / "t")
    write_deltalake(table, pa.table({"id": [1, 2, 3], "p": ["x y", "z", None]}), partition_by=["p"])
    result = run_generate(None, table, token="ignored")
    assert (result.version, result.operation, dict(result.metrics)) == (
        0, "GENERATE", {"numManifestsWritten": 3, "numManifestsDeleted": 0},
    )  # fmt: skip
    assert current(table) == delta_rs_manifests(table)

    write_deltalake(table, pa.table({"id": [4], "p": ["z"]}), mode="overwrite", partition_by=["p"])
    argv = [
        sys.executable,
        "-m",
        "airflow_delta_provider.spark",
        "generate",
        table,
        "--mode",
        "symlink_format_manifest",
    ]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    assert sorted(manifests(table)) == ["p=z"]  # delta-rs's overwrite left only "z"
    assert current(table) == delta_rs_manifests(table)
    bad = subprocess.run([*argv[:-1], "hive_manifest"], capture_output=True, text=True)
    assert bad.returncode != 0 and "symlink_format_manifest" in bad.stderr
