"""Interop both ways with delta-rs (``deltalake``) and delta-kernel-rs (DuckDB).

* Tables the core creates and changes (data files written here with
  pyarrow) are read by ``deltalake`` and by DuckDB's ``delta_scan`` with the
  rows the test wrote, at the version the core committed.
* Tables ``deltalake`` writes (special-character and null partitions,
  overwrite, delete, checkpoint, schema evolution) are read by the core with
  the same files, schema and rows, at every version.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_delta_provider.delta.actions.model import TOKEN_TAG
from airflow_delta_provider.delta.table import DeltaTable

deltalake = pytest.importorskip("deltalake")

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("amount", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)

#: Partition values delta-spark escapes or encodes, plus a null.
SPECIAL_PARTS = ["a b", "x/y", "c=d", "%", "p#q", "ü:é", "", None]


def batch(start: int, n: int, schema: pa.Schema = SCHEMA) -> pa.Table:
    """``n`` rows with ids ``start..start+n-1``; some nulls."""
    ids = list(range(start, start + n))
    cols: dict[str, list[Any]] = {
        "id": ids,
        "name": [None if i % 7 == 3 else f"name-{i}" for i in ids],
        "value": [i * 0.5 for i in ids],
        "amount": [Decimal(i).scaleb(-2) for i in ids],
        "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 40) for i in ids],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i) for i in ids],
    }
    return pa.table({f.name: pa.array(cols[f.name], type=f.type) for f in schema}, schema=schema)


def rs_add_paths(path: Path, version: int | None = None) -> list[str]:
    t = deltalake.DeltaTable(str(path), version=version) if version is not None else deltalake.DeltaTable(str(path))
    return sorted(t.get_add_actions(flatten=True).column("path").to_pylist())


def duckdb_table(con: Any, path: Path) -> pa.Table:
    return con.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()


# --- Written by the core, read by delta-rs and DuckDB ----------------------------


@pytest.fixture(scope="module")
def core_history(tmp_path_factory, new_table, data_file) -> dict[str, Any]:
    """A 25-version table made by the core: appends (some idempotent with
    ``txn``), rewrites that remove files, a delete, checkpoints at 10 and 20.

    Returns the path and, per version, the rows the test expects there.
    """
    root = tmp_path_factory.mktemp("core") / "table"
    live: dict[str, pa.Table] = {}
    expected: dict[int, pa.Table] = {}
    adds: dict[str, Any] = {}

    first = batch(0, 10)
    add = data_file(root, first)
    live[add.path], adds[add.path] = first, add
    result = new_table(root, SCHEMA, adds=[add])
    assert result.version == 0
    expected[0] = pa.concat_tables(live.values())

    table = DeltaTable(str(root))
    next_id = 10
    for version in range(1, 25):
        snap = table.snapshot()
        if version % 6 == 0:
            # Rewrite: drop the rows with odd ids from the oldest file.
            victim = sorted(live)[0]
            kept = live[victim].filter(pc.equal(pc.bit_wise_and(live[victim]["id"], 1), 0))
            txn = table.transaction("DELETE", parameters={"predicate": ["id % 2 = 1"]}, snapshot=snap)
            txn.read_files([adds[victim]])
            new_add = data_file(root, kept)
            txn.add_all([adds[victim].remove(snap.timestamp + 1), new_add])
            del live[victim], adds[victim]
            live[new_add.path], adds[new_add.path] = kept, new_add
            result = txn.commit(metrics={"numRemovedFiles": 1, "numAddedFiles": 1}, token=f"t{version}")
        elif version % 6 == 3:
            # Delete a whole file.
            victim = sorted(live)[-1]
            txn = table.transaction("DELETE", parameters={"predicate": ["true"]}, snapshot=snap)
            txn.read_files([adds[victim]])
            txn.add(adds[victim].remove(snap.timestamp + 1))
            del live[victim], adds[victim]
            result = txn.commit(metrics={"numRemovedFiles": 1}, token=f"t{version}")
        else:
            data = batch(next_id, 5)
            next_id += 5
            add = data_file(root, data)
            txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
            if version % 2:
                txn.set_txn("interop-app", version)
            txn.add(add)
            live[add.path], adds[add.path] = data, add
            result = txn.commit(metrics={"numFiles": 1, "numOutputRows": data.num_rows}, token=f"t{version}")
        assert result.version == version
        expected[version] = pa.concat_tables(live.values()) if live else SCHEMA.empty_table()
    return {"root": root, "expected": expected, "latest": 24}


def test_core_table_has_checkpoints(core_history) -> None:
    log = core_history["root"] / "_delta_log"
    assert (log / "00000000000000000010.checkpoint.parquet").is_file()
    assert (log / "00000000000000000020.checkpoint.parquet").is_file()
    last = json.loads((log / "_last_checkpoint").read_text())
    assert last["version"] == 20
    assert "parts" not in last and "checksum" not in last
    assert last["numOfAddFiles"] == DeltaTable(str(core_history["root"])).snapshot(version=20).num_files


def test_core_table_read_by_delta_rs_at_every_version(core_history, rows_of, snapshot_rows) -> None:
    root, expected = core_history["root"], core_history["expected"]
    table = DeltaTable(str(root))
    assert deltalake.DeltaTable(str(root)).version() == table.latest_version() == core_history["latest"]
    for version, rows in expected.items():
        rs = deltalake.DeltaTable(str(root), version=version)
        snap = table.snapshot(version=version)
        assert rs_add_paths(root, version) == sorted(a.path for a in snap.files)
        assert rows_of(rs.to_pyarrow_table()) == rows_of(rows), f"delta-rs rows at v{version}"
        assert rows_of(snapshot_rows(snap)) == rows_of(rows), f"core rows at v{version}"


def test_core_table_read_by_duckdb(core_history, duckdb_delta, rows_of) -> None:
    root = core_history["root"]
    got = duckdb_table(duckdb_delta, root)
    assert rows_of(got, SCHEMA.names) == rows_of(core_history["expected"][core_history["latest"]])


def test_core_table_history_and_txn_seen_by_delta_rs(core_history) -> None:
    root = core_history["root"]
    rs = deltalake.DeltaTable(str(root))
    assert rs.transaction_version("interop-app") == DeltaTable(str(root)).snapshot().txn_version("interop-app") == 23
    history = rs.history()
    assert [h["version"] for h in history] == list(range(core_history["latest"], -1, -1))
    append = next(h for h in history if h["version"] == 23)
    assert append["operation"] == "WRITE"
    assert append["operationMetrics"] == {"numFiles": "1", "numOutputRows": "5"}
    assert next(h for h in history if h["version"] == 24)["operation"] == "DELETE"
    found = DeltaTable(str(root)).find_commit("t12")
    assert found is not None and found[0] == 12 and found[1].raw["tags"][TOKEN_TAG] == "t12"


@pytest.fixture(scope="module")
def core_partitioned(tmp_path_factory, new_table, data_file) -> dict[str, Any]:
    """A core table partitioned by a string with special characters and nulls,
    and by an integer with a null; one partition's file is then removed."""
    root = tmp_path_factory.mktemp("core-part") / "table"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("k", pa.int32())])
    data_schema = pa.schema([("id", pa.int64())])
    adds, rows = [], []
    for i, p in enumerate(SPECIAL_PARTS):
        k = None if i % 3 == 2 else i % 3
        data = pa.table({"id": pa.array([i * 10, i * 10 + 1], pa.int64())}, schema=data_schema)
        adds.append(data_file(root, data, {"p": p, "k": k}, {"p": "string", "k": "integer"}))
        rows.extend({"id": x, "p": None if p == "" else p, "k": k} for x in (i * 10, i * 10 + 1))
    new_table(root, schema, partition_columns=["p", "k"], adds=adds)

    # Version 1: remove the "x/y" partition's file.
    table = DeltaTable(str(root))
    snap = table.snapshot()
    victim = next(a for a in snap.files if a.partition_values["p"] == "x/y")
    txn = table.transaction("DELETE", parameters={"predicate": ["p = 'x/y'"]}, snapshot=snap)
    txn.read_files([victim])
    txn.add(victim.remove(snap.timestamp + 1))
    assert txn.commit(metrics={"numRemovedFiles": 1}).version == 1
    rows = [r for r in rows if r["p"] != "x/y"]
    return {"root": root, "rows": pa.Table.from_pylist(rows, schema=schema), "schema": schema}


def test_core_partitioned_table_read_by_delta_rs(core_partitioned, rows_of, snapshot_rows) -> None:
    root = core_partitioned["root"]
    rs = deltalake.DeltaTable(str(root))
    assert rs.version() == 1
    snap = DeltaTable(str(root)).snapshot()
    assert rs_add_paths(root) == sorted(a.path for a in snap.files)
    assert rows_of(rs.to_pyarrow_table(), ["id", "p", "k"]) == rows_of(core_partitioned["rows"])
    assert rows_of(snapshot_rows(snap), ["id", "p", "k"]) == rows_of(core_partitioned["rows"])


def test_core_partitioned_table_read_by_duckdb(core_partitioned, duckdb_delta, rows_of) -> None:
    got = duckdb_table(duckdb_delta, core_partitioned["root"])
    assert rows_of(got, ["id", "p", "k"]) == rows_of(core_partitioned["rows"])


def test_core_partition_paths_follow_delta_spark(core_partitioned) -> None:
    """Hive directories, escaped, then URI-encoded in ``add.path``."""
    snap = DeltaTable(str(core_partitioned["root"])).snapshot()
    by_value = {a.partition_values["p"]: a for a in snap.files}
    assert by_value[None].path.startswith("p=__HIVE_DEFAULT_PARTITION__/")
    assert by_value["a b"].path.startswith("p=a%20b/")
    assert by_value["%"].path.startswith("p=%2525/")
    assert by_value["c=d"].path.startswith("p=c%253Dd/")
    for add in snap.files:
        assert os.path.isfile(snap.file_path(add))


# --- Written by delta-rs, read by the core -------------------------------------------


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory) -> Path:
    """A delta-rs table: partitioned appends with special characters and nulls,
    an overwrite, a delete, a checkpoint, and a schema-merging append."""
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("rs") / "table"

    def part_batch(start: int) -> pa.Table:
        n = len(SPECIAL_PARTS)
        return pa.table(
            {
                "id": pa.array(range(start, start + n), pa.int64()),
                "part": pa.array(SPECIAL_PARTS, pa.string()),
                "x": pa.array([float(i) if i % 3 else None for i in range(start, start + n)], pa.float64()),
            }
        )

    write_deltalake(str(root), part_batch(0), partition_by=["part"])  # v0
    write_deltalake(str(root), part_batch(100), partition_by=["part"], mode="append")  # v1
    write_deltalake(str(root), part_batch(200), partition_by=["part"], mode="append")  # v2
    write_deltalake(str(root), part_batch(300), partition_by=["part"], mode="overwrite")  # v3
    write_deltalake(str(root), part_batch(400), partition_by=["part"], mode="append")  # v4
    dt_rs = deltalake.DeltaTable(str(root))
    dt_rs.delete("id % 2 = 0")  # v5
    dt_rs = deltalake.DeltaTable(str(root))
    dt_rs.create_checkpoint()
    evolved = part_batch(500).append_column("extra", pa.array([f"e{i}" for i in range(len(SPECIAL_PARTS))]))
    write_deltalake(str(root), evolved, partition_by=["part"], mode="append", schema_mode="merge")  # v6
    write_deltalake(
        str(root),
        part_batch(600).append_column("extra", pa.array([None] * len(SPECIAL_PARTS), pa.string())),
        partition_by=["part"],
        mode="append",
    )  # v7
    return root


def test_rs_table_has_the_history_it_should(rs_table: Path) -> None:
    log = rs_table / "_delta_log"
    assert deltalake.DeltaTable(str(rs_table)).version() == 7
    assert (log / "00000000000000000005.checkpoint.parquet").is_file()
    assert any('"remove"' in (log / f"{v:020d}.json").read_text() for v in (3, 5))


@pytest.mark.parametrize("version", list(range(8)))
def test_rs_table_read_by_core(rs_table: Path, version: int, rows_of, snapshot_rows) -> None:
    rs = deltalake.DeltaTable(str(rs_table), version=version)
    snap = DeltaTable(str(rs_table)).snapshot(version=version)
    assert snap.version == version
    assert sorted(a.path for a in snap.files) == rs_add_paths(rs_table, version)
    assert sorted(snap.file_path(a) for a in snap.files) == sorted(rs.file_uris())
    assert [f["name"] for f in snap.schema["fields"]] == [f.name for f in rs.schema().fields]
    assert json.loads(rs.schema().to_json())["fields"] == [
        {**f, "metadata": f.get("metadata", {})} for f in snap.schema["fields"]
    ]
    assert snap.partition_columns == ["part"]
    expected = rs.to_pyarrow_table()
    assert rows_of(snapshot_rows(snap), expected.column_names) == rows_of(expected)
    assert snap.num_records == expected.num_rows


def test_rs_table_latest_read_from_its_checkpoint(rs_table: Path, tmp_path: Path, rows_of, snapshot_rows) -> None:
    """With the commits before the checkpoint gone, the core replays from it."""
    import shutil

    copy = tmp_path / "t"
    shutil.copytree(rs_table, copy)
    for v in range(5):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    snap = DeltaTable(str(copy)).snapshot()
    assert snap.version == 7
    expected = deltalake.DeltaTable(str(rs_table)).to_pyarrow_table()
    assert rows_of(snapshot_rows(snap), expected.column_names) == rows_of(expected)


def test_rs_table_time_travel_by_timestamp_matches_delta_rs(rs_table: Path, tmp_path: Path) -> None:
    """Commit times are file mtimes: give each commit its own second and ask both."""
    import shutil

    copy = tmp_path / "t"
    shutil.copytree(rs_table, copy)
    base = 1_700_000_000
    for v in range(8):
        f = copy / "_delta_log" / f"{v:020d}.json"
        os.utime(f, (base + 10 * v, base + 10 * v))
    table = DeltaTable(str(copy))
    for v in range(8):
        for offset in (0, 5):
            when = dt.datetime.fromtimestamp(base + 10 * v + offset, dt.timezone.utc)
            rs = deltalake.DeltaTable(str(copy))
            rs.load_as_version(when)
            assert table.snapshot(timestamp=when).version == rs.version() == v
