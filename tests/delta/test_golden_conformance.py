"""Conformance of the core on delta-spark's golden tables.

delta-spark cannot run here, so the tables it wrote are the reference, and two
independent readers are the oracles: ``deltalake`` (delta-rs) first, DuckDB's
``delta`` extension (delta-kernel-rs) where delta-rs cannot read a table. The
groups follow ``delta-golden/README.md``:

* plain reader-1/writer-2 tables: same live files, schema and rows as the
  oracle, at every version (time travel by version, and by timestamp);
* deletion vector tables: same live files, deleted row indexes, row counts
  and rows (vectors applied) as both oracles, at every version;
* V2 checkpoint tables: same live files, schema and rows as both oracles at
  every version, and the same state from the checkpoint alone;
* protocol gates: a snapshot is refused with an error naming the feature;
* writer-only features: read, but a transaction is refused, naming the
  writer feature, and nothing is written;
* damaged or odd logs: the errors (or the recovery) the README describes.

Where no oracle can read a table (some golden tables log files that were never
written or were vacuumed, or omit ``schemaString``), the expectation comes from
the Scala test that made the table and is written out next to it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import (
    CorruptLogError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

# --- The groups -----------------------------------------------------------------

PLAIN_TABLES = [
    "124-decimal-decode-bug",
    "125-iterator-bug",
    "basic-decimal-table",
    "basic-decimal-table-legacy",
    "basic-with-inserts-deletes-checkpoint",
    "basic-with-inserts-merge",
    "basic-with-inserts-overwrite-restore",
    "basic-with-inserts-updates",
    "checkpoint",
    "data-reader-array-complex-objects",
    "data-reader-array-primitives",
    "data-reader-date-types-America/Los_Angeles",
    "data-reader-date-types-Asia/Beirut",
    "data-reader-date-types-Etc/GMT+9",
    "data-reader-date-types-Iceland",
    "data-reader-date-types-JST",
    "data-reader-date-types-PST",
    "data-reader-date-types-UTC",
    "data-reader-escaped-chars",
    "data-reader-map",
    "data-reader-nested-struct",
    "data-reader-nullable-field-invalid-schema-key",
    "data-reader-partition-values",
    "data-reader-primitives",
    "data-skipping-basic-stats-all-types",
    "data-skipping-basic-stats-all-types-checkpoint",
    "data-skipping-partition-and-data-column",
    "decimal-various-scale-precision",
    "delete-re-add-same-file-different-transactions",
    "kernel-timestamp-INT96",
    "kernel-timestamp-PST",
    "kernel-timestamp-TIMESTAMP_MICROS",
    "kernel-timestamp-TIMESTAMP_MILLIS",
    "kernel-timestamp-partition-col-ISO8601",
    "log-replay-special-characters",
    "log-replay-special-characters-a",
    "log-replay-special-characters-b",
    "multi-part-checkpoint",
    "only-checkpoint-files",
    "snapshot-data0",
    "snapshot-data1",
    "snapshot-data2",
    "snapshot-data2-deleted",
    "snapshot-data3",
    "snapshot-repartitioned",
    "snapshot-vacuumed",
    "time-travel-partition-changes-a",
    "time-travel-partition-changes-b",
    "time-travel-schema-changes-a",
    "time-travel-schema-changes-b",
    "time-travel-start",
    "time-travel-start-start20",
    "time-travel-start-start20-start40",
    # Reader 1 / writer 2 tables outside the README's list, read the same way.
    "data-skipping-change-stats-collected-across-versions",
    "deltalog-getChanges",
    "parquet-decimal-dictionaries",
    "parquet-decimal-dictionaries-v2",
    "parquet-decimal-type",
]

#: Tables whose every version is also looked up by its commit timestamp.
TIMESTAMP_TABLES = [
    "basic-with-inserts-deletes-checkpoint",
    "snapshot-data2-deleted",
    "time-travel-start-start20-start40",
    "125-iterator-bug",
]

#: Table -> words of which the gate's message must hold at least one.
PROTOCOL_GATES: dict[str, tuple[str, ...]] = {
    "deltalog-invalid-protocol-version": ("99",),
}

#: Readable tables whose writes must be refused -> the writer feature to name.
WRITER_GATES: dict[str, tuple[str, ...]] = {
    "collations-preview-table": ("collations-preview", "domainMetadata"),
    "collations-table": ("collations", "domainMetadata"),
    "basic-with-vacuum-protocol-check-feature": ("vacuumProtocolCheck",),
    "table-with-icebegCompatV2Enabled": ("icebergCompatV2",),
}

#: Tables whose latest version is read from a UUID-named V2 checkpoint (JSON,
#: parquet) whose file actions are in two sidecars; they need only
#: ``v2Checkpoint`` besides ``appendOnly`` and ``invariants``. delta-rs's
#: pyarrow reader refuses the feature; its DataFusion reader and DuckDB read them.
V2_CHECKPOINT_TABLES = ["v2-checkpoint-json", "v2-checkpoint-parquet"]

#: Tables with ``timestamp_ntz`` columns (reader and writer feature
#: ``timestampNtz``): one partitioned by such a column, two with every
#: primitive type. Table -> whether DuckDB reads it too (it fails on the
#: legacy two-level list layout of parquet-all-types-legacy-format).
TIMESTAMP_NTZ_TABLES = {
    "data-reader-timestamp_ntz": True,
    "parquet-all-types": True,
    "parquet-all-types-legacy-format": False,
}

#: Tables with ``variant`` columns (reader and writer feature
#: ``variantType-preview``): at the top level and in arrays, structs and maps.
#: delta-rs reads them as their struct of binary ``value`` and ``metadata``;
#: DuckDB reads the values (as JSON here), but not into Arrow.
VARIANT_TABLES = ["spark-variant-checkpoint"]

#: Tables whose columns delta-spark widened (feature ``typeWidening-preview``)
#: after a first file was written: flat ones (every change of PROTOCOL.md's
#: list), and a struct field, a map key and value and an array element.
#: Table -> how many ``delta.typeChanges`` entries its latest schema holds.
#: delta-rs refuses the preview feature; DuckDB (delta-kernel-rs) reads it.
TYPE_WIDENING_TABLES = {"type-widening": 13, "type-widening-nested": 4}

#: Tables whose files carry deletion vectors (delta-rs's pyarrow reader refuses
#: them; its DataFusion reader and DuckDB apply them).
DV_TABLES = ["dv-partitioned-with-checkpoint", "log-replay-dv-key-cases", "dv-with-columnmapping"]

#: Tables with column mapping (legacy reader 2, or the reader feature): data
#: files, stats and partition values use physical names (and field ids).
COLUMN_MAPPING_TABLES = [
    "table-with-columnmapping-mode-id",
    "table-with-columnmapping-mode-name",
    "data-skipping-basic-stats-all-types-columnmapping-id",
    "data-skipping-basic-stats-all-types-columnmapping-name",
    "table-with-icebegCompatV2Enabled",
    "data-reader-timestamp_ntz-id-mode",
    "data-reader-timestamp_ntz-name-mode",
]


# --- Helpers --------------------------------------------------------------------


def _core_table(path: Path) -> Any:
    from airflow_delta_provider.delta.table import DeltaTable

    return DeltaTable(str(path))


def _rs_table(path: Path, version: int | None = None) -> Any:
    from deltalake import DeltaTable as RsTable

    return RsTable(str(path), version=version) if version is not None else RsTable(str(path))


def _normalize_schema(schema: dict[str, Any]) -> Any:
    """A Delta schema without field metadata, for comparing two engines' views."""

    def norm_type(t: Any) -> Any:
        if isinstance(t, str):
            return t.replace(" ", "").lower()
        kind = t["type"]
        if kind == "struct":
            return [(f["name"], norm_type(f["type"]), bool(f.get("nullable", True))) for f in t["fields"]]
        if kind == "array":
            return ("array", norm_type(t["elementType"]), bool(t.get("containsNull", True)))
        if kind == "map":
            return ("map", norm_type(t["keyType"]), norm_type(t["valueType"]), bool(t.get("valueContainsNull", True)))
        return t

    return norm_type(schema)


def _commit_versions(path: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (path / "_delta_log").glob("*.json") if p.name[:20].isdigit())


def _plain_versions(path: Path) -> list[int]:
    """Every version the table can be read at: from the oldest commit whose
    replay is possible (a checkpoint or version 0) to the latest."""
    rs = _rs_table(path)
    return list(range(0, rs.version() + 1))


def _duckdb_rows(con: Any, path: Path) -> Any:
    return con.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()


# --- Plain tables ---------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in PLAIN_TABLES])
def test_plain_table_matches_delta_rs_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    path = golden_dir / name
    table = _core_table(path)
    latest = _rs_table(path).version()
    assert table.latest_version() == latest
    assert table.snapshot().version == latest

    unreadable: list[str] = []
    for version in _plain_versions(path):
        snap = table.snapshot(version=version)
        rs = _rs_table(path, version)
        assert snap.version == version == rs.version()

        # Same live files, path for path as the log spells them.
        ours = sorted(a.path for a in snap.files)
        theirs = sorted(rs.get_add_actions(flatten=True).column("path").to_pylist())
        assert ours == theirs, f"v{version}: live files differ"
        # delta-rs resolves symbolic links in the table root; the core keeps it as given.
        assert sorted(os.path.realpath(snap.file_path(a)) for a in snap.files) == sorted(
            os.path.realpath(u) for u in rs.file_uris()
        ), f"v{version}: absolute locations differ"

        # Same schema and partitioning.
        assert _normalize_schema(snap.schema) == _normalize_schema(json.loads(rs.schema().to_json()))
        assert list(snap.partition_columns) == list(rs.metadata().partition_columns)

        # Same rows, where an oracle can read the data files.
        try:
            expected = rs.to_pyarrow_table()
        except Exception as exc:
            if version == latest:
                try:
                    expected = _duckdb_rows(duckdb_delta, path)
                except Exception:
                    unreadable.append(f"v{version}: {type(exc).__name__}")
                    continue
            else:
                unreadable.append(f"v{version}: {type(exc).__name__}")
                continue
        got = snapshot_rows(snap)
        assert [c.lower() for c in got.column_names] == [c.lower() for c in expected.column_names]
        if not rows_match(got, expected):  # show the difference
            assert rows_of(got, expected.column_names) == rows_of(expected), f"v{version}: rows differ"

    if unreadable:
        # delta-rs reads the log but not the data (files never written, or
        # vacuumed). Our reader must then fail on the same missing file, not
        # return something else.
        for note in unreadable:
            version = int(note[1:].split(":")[0])
            snap = table.snapshot(version=version)
            with pytest.raises((OSError, ValueError)):
                snapshot_rows(snap)


# --- Column mapping tables --------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in COLUMN_MAPPING_TABLES])
def test_column_mapping_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    """Same files, logical schema, partitioning and rows as delta-rs's
    DataFusion reader (which maps columns); the same row count as DuckDB."""
    path = golden_dir / name
    table = _core_table(path)
    latest = _rs_table(path).version()
    assert table.latest_version() == latest
    rows_seen = 0
    for version in range(latest + 1):
        snap = table.snapshot(version=version)
        rs = _rs_table(path, version)
        assert snap.column_mapping.mode in ("name", "id")
        assert sorted(a.path for a in snap.files) == sorted(rs.get_add_actions(flatten=True).column("path").to_pylist())
        assert _normalize_schema(snap.schema) == _normalize_schema(json.loads(rs.schema().to_json()))
        assert list(snap.partition_columns) == list(rs.metadata().partition_columns)
        got = snapshot_rows(snap)
        by_rs = _rs_rows_with_dvs(rs)
        # DuckDB's delta extension (1.4) reads a mapped partition column that
        # is not the first column as null, so it only checks the row count.
        by_duckdb = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}', version => {version})").fetchone()
        assert got.num_rows == by_rs.num_rows == by_duckdb[0], f"v{version}"
        rows_seen += got.num_rows
        assert [c.lower() for c in got.column_names] == [c.lower() for c in by_rs.column_names]
        if not rows_match(got, by_rs):
            assert rows_of(got, by_rs.column_names) == rows_of(by_rs), f"v{version}: rows differ"
    assert rows_seen > 0


def test_column_mapping_stats_prune_by_physical_names(golden_dir: Path) -> None:
    """The stats of a mapped table are keyed by physical names: file skipping
    on a logical column must find them (a miss would keep every file, a
    wrong key would drop the file)."""
    for mode in ("id", "name"):
        snap = _core_table(golden_dir / f"data-skipping-basic-stats-all-types-columnmapping-{mode}").snapshot()
        assert snap.files_matching("as_int = 0") == snap.files
        assert snap.files_matching("as_int = 1") == []
        assert snap.files_matching("as_string > '1'") == []


# --- Deletion vector tables -------------------------------------------------------


def _rs_rows_with_dvs(rs: Any) -> Any:
    """delta-rs's rows through DataFusion, which applies deletion vectors."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    return pa.table(QueryBuilder().register("t", rs).execute("SELECT * FROM t").read_all())


def _rs_deleted_rows(rs: Any) -> dict[str, list[int]]:
    """Absolute file path -> the row indexes delta-kernel's selection vectors drop."""
    from urllib.parse import unquote, urlparse

    import pyarrow as pa

    out = {}
    for row in pa.table(rs.deletion_vectors()).to_pylist():
        path = unquote(urlparse(row["filepath"]).path)
        out[os.path.realpath(path)] = [i for i, keep in enumerate(row["selection_vector"]) if not keep]
    return out


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in DV_TABLES])
def test_deletion_vector_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    path = golden_dir / name
    table = _core_table(path)
    latest = _rs_table(path).version()
    assert table.latest_version() == latest
    saw_dv = False
    for version in range(latest + 1):
        snap = table.snapshot(version=version)
        rs = _rs_table(path, version)

        # Same live files: one per (path, DV id), the newest DV of each path.
        ours = sorted(a.path for a in snap.files)
        assert ours == sorted(rs.get_add_actions(flatten=True).column("path").to_pylist()), f"v{version}"
        assert len(set(ours)) == len(ours), f"v{version}: a path is live twice"

        # Same deleted row indexes, file by file, as delta-kernel's selection vectors.
        theirs = _rs_deleted_rows(rs)
        for add in snap.files:
            deleted = snap.deleted_rows(add)
            saw_dv |= deleted is not None
            expected = theirs.get(os.path.realpath(snap.file_path(add)), [])
            assert (list(deleted) if deleted is not None else []) == expected, f"v{version}: {add.path}"

        # Same rows (deleted ones left out) as delta-rs and DuckDB.
        got = snapshot_rows(snap)
        by_rs = _rs_rows_with_dvs(rs)
        by_duckdb = duckdb_delta.execute(
            f"SELECT * FROM delta_scan('{path}', version => {version})"
        ).fetch_arrow_table()
        assert got.num_rows == snap.num_records == by_rs.num_rows == by_duckdb.num_rows, f"v{version}"
        for expected in (by_rs, by_duckdb):
            if not rows_match(got, expected):
                assert rows_of(got, expected.column_names) == rows_of(expected), f"v{version}: rows differ"
    assert saw_dv


def test_dv_key_cases_keep_the_newest_vector_of_the_file(golden_dir: Path) -> None:
    """log-replay-dv-key-cases: three DELETEs each replace the file's DV with a
    wider one (add (f, dv_n) + remove (f, dv_n-1)); one file stays live."""
    snap = _core_table(golden_dir / "log-replay-dv-key-cases").snapshot()
    (live,) = snap.files
    assert live.deletion_vector is not None and live.deletion_vector.cardinality == 3
    assert list(snap.deleted_rows(live)) == [0, 7, 14]
    assert snap.num_records == 50 - 3
    dv_ids = {t.dv_id for t in snap.all_tombstones}
    assert len(dv_ids) == 3 and None in dv_ids


# --- V2 checkpoint tables ------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in V2_CHECKPOINT_TABLES])
def test_v2_checkpoint_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, tmp_path: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    path = golden_dir / name
    table = _core_table(path)
    latest = _rs_table(path).version()
    assert table.latest_version() == latest == 2
    for version in range(latest + 1):
        snap = table.snapshot(version=version)
        rs = _rs_table(path, version)
        assert sorted(a.path for a in snap.files) == sorted(
            rs.get_add_actions(flatten=True).column("path").to_pylist()
        ), f"v{version}"
        assert _normalize_schema(snap.schema) == _normalize_schema(json.loads(rs.schema().to_json()))
        got = snapshot_rows(snap)
        by_rs = _rs_rows_with_dvs(rs)
        by_duckdb = duckdb_delta.execute(
            f"SELECT * FROM delta_scan('{path}', version => {version})"
        ).fetch_arrow_table()
        assert got.num_rows == by_rs.num_rows == by_duckdb.num_rows, f"v{version}"
        for expected in (by_rs, by_duckdb):
            if not rows_match(got, expected):
                assert rows_of(got, expected.column_names) == rows_of(expected), f"v{version}: rows differ"
    # The latest version comes from the V2 checkpoint, its sidecars holding the files.
    (top,) = table.snapshot().segment.checkpoint_files
    assert top.kind == "v2checkpoint" and table.snapshot().segment.commits == ()
    assert table.snapshot().num_records == 10

    # With the commits before it gone, the checkpoint alone gives the same state.
    copy = tmp_path / "t"
    shutil.copytree(path, copy)
    for version in range(latest + 1):
        (copy / "_delta_log" / f"{version:020d}.json").unlink()
    alone = _core_table(copy).snapshot()
    assert alone.version == latest and rows_of(snapshot_rows(alone)) == rows_of(snapshot_rows(table.snapshot()))


# --- timestamp_ntz tables -------------------------------------------------------------


def _ntz_values(column: Any) -> list[Any]:
    """A column's values, sorted nulls first, exactly as given (no zone applied)."""
    return sorted(column.to_pylist(), key=lambda v: (v is not None, v or dt.datetime.min))


def _each_version_with_delta_rs(path: Path) -> Any:
    """(our snapshot, delta-rs's table) at every version of ``path``, once
    both agree on the latest version and on each version's live files."""
    table, newest = _core_table(path), _rs_table(path).version()
    assert table.latest_version() == newest
    for v in range(newest + 1):
        ours, theirs = table.snapshot(version=v), _rs_table(path, v)
        live = theirs.get_add_actions(flatten=True).column("path").to_pylist()
        assert sorted(a.path for a in ours.files) == sorted(live), f"v{v}: live files differ"
        yield ours, theirs


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in TIMESTAMP_NTZ_TABLES])
def test_timestamp_ntz_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    import pyarrow as pa

    path = golden_dir / name
    for snap, rs in _each_version_with_delta_rs(path):
        version = snap.version
        assert "timestampNtz" in snap.protocol.reader_features
        got = snapshot_rows(snap)
        oracles = [rs.to_pyarrow_table()]
        if TIMESTAMP_NTZ_TABLES[name]:
            oracles.append(
                duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}', version => {version})").fetch_arrow_table()
            )
        ntz = [f["name"] for f in snap.schema["fields"] if f["type"] == "timestamp_ntz"]
        assert ntz
        for expected in oracles:
            if not rows_match(got, expected):
                assert rows_of(got, expected.column_names) == rows_of(expected), f"v{version}: rows differ"
            # Row comparison takes a naive value as UTC; here the wall-clock
            # values must be equal as they are, with no zone on either side.
            for column in ntz:
                assert got.schema.field(column).type == expected.schema.field(column).type == pa.timestamp("us")
                assert _ntz_values(got.column(column)) == _ntz_values(expected.column(column)), column


def test_timestamp_ntz_partition_values_are_wall_clock_times(golden_dir: Path, snapshot_rows) -> None:
    """data-reader-timestamp_ntz: the partition column reads back as the
    logged text says, whatever the time zone (PROTOCOL.md: no zone)."""
    snap = _core_table(golden_dir / "data-reader-timestamp_ntz").snapshot()
    values = set(snapshot_rows(snap).column("tsNtzPartition").to_pylist())
    assert values == {dt.datetime(2013, 7, 5, 17, 1, 0, 123456), dt.datetime(2021, 11, 18, 2, 30, 0, 123456), None}


# --- variant tables ----------------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in VARIANT_TABLES])
def test_variant_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    """Same files, schema and rows (variant bytes included) as delta-rs, and
    the same ids as DuckDB, whose variant values are what the table's
    generator (its ``info.txt``) wrote: ``{"key": id}`` in every variant
    slot. delta-spark appended rows 0 and 1 again at versions 1 and 2."""
    path = golden_dir / name
    expected_ids = {0: list(range(100)), 1: sorted([*range(100), 0]), 2: sorted([*range(100), 0, 1])}
    for snap, rs in _each_version_with_delta_rs(path):
        version = snap.version
        assert "variantType-preview" in snap.protocol.reader_features
        assert _normalize_schema(snap.schema) == _normalize_schema(json.loads(rs.schema().to_json()))
        got = snapshot_rows(snap)
        by_rs = rs.to_pyarrow_table()
        if not rows_match(got, by_rs):
            assert rows_of(got, by_rs.column_names) == rows_of(by_rs), f"v{version}: rows differ"
        assert sorted(got.column("id").to_pylist()) == expected_ids[version]

        by_duckdb = duckdb_delta.execute(
            f"SELECT id, v::JSON, struct_of_variants.v::JSON, array_of_variants::JSON, map_of_variants::JSON "
            f"FROM delta_scan('{path}', version => {version})"
        ).fetchall()
        assert sorted(r[0] for r in by_duckdb) == expected_ids[version]
        for id_, v, nested, array, mapped in by_duckdb:
            one = {"key": id_}
            assert json.loads(v) == json.loads(nested) == one
            assert json.loads(array) == [one, None, one, None, one]
            assert json.loads(mapped) == {str(id_): one, "nullKey": None}
    # The latest version comes from the checkpoint at version 2.
    assert [c.version for c in _core_table(path).snapshot().segment.checkpoint_files] == [2]


# --- Type widening tables ----------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in TYPE_WIDENING_TABLES])
def test_type_widening_table_matches_oracles_at_every_version(
    name: str, golden_dir: Path, snapshot_rows, rows_of, rows_match, duckdb_delta
) -> None:
    """Every version reads as DuckDB reads it, in the table's types: at the
    latest one, the file written before the change comes back widened
    (``1`` as ``decimal(11,1)``, a date as midnight), not as it is stored.
    delta-rs agrees on version 0, the only one before the feature."""
    from airflow_delta_provider.delta.schema.widening import all_changes

    path = golden_dir / name
    table = _core_table(path)
    assert table.latest_version() == 2
    for version in range(3):
        snap = table.snapshot(version=version)
        got = snapshot_rows(snap)
        oracles = [duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}', version => {version})").fetch_arrow_table()]
        if version == 0:
            oracles.append(_rs_table(path, 0).to_pyarrow_table())
        for expected in oracles:
            assert got.num_rows == expected.num_rows, f"v{version}"
            if not rows_match(got, expected):
                assert rows_of(got, expected.column_names) == rows_of(expected), f"v{version}: rows differ"
            # Row comparison normalises decimals and numbers: the types must agree too.
            for field in got.schema:
                assert _arrow_shape(field.type) == _arrow_shape(expected.schema.field(field.name).type), field.name
    latest = table.snapshot()
    assert "typeWidening-preview" in latest.protocol.reader_features
    assert len(all_changes(latest.schema)) == TYPE_WIDENING_TABLES[name]


def _arrow_shape(t: Any) -> Any:
    """An Arrow type without its nested field names (engines name list items
    and map entries differently)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return tuple((t.field(i).name, _arrow_shape(t.field(i).type)) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return ("map", _arrow_shape(t.key_type), _arrow_shape(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", _arrow_shape(t.value_type))
    return str(t)


def test_type_widening_skipping_keeps_files_with_stats_of_the_old_type(golden_dir: Path) -> None:
    """type-widening: the first file's stats are in the old types (a date
    min for a column now timestamp_ntz, a float 3.4 for a double column):
    a condition its widened value matches must keep it, one it cannot
    match must still prune it."""
    snap = _core_table(golden_dir / "type-widening").snapshot()
    old, new = sorted(snap.files, key=lambda f: f.default_row_commit_version or 0)
    for condition in (
        "date_timestamp_ntz = '2024-09-09 00:00:00'",
        "float_double = 3.4000000953674316",
        "decimal_decimal_greater_scale = 67.89",
        "byte_decimal = 1",
        "long_decimal < 4.05",
    ):
        assert old in snap.files_matching(condition), condition
    for condition in ("date_timestamp_ntz > '2024-09-09 00:00:00.001'", "byte_long > 1", "int_decimal >= 3.1"):
        assert snap.files_matching(condition) == [new], condition


def monotonic_commit_times(path: Path) -> list[int]:
    """Commit times as delta-spark's DeltaHistoryManager sees them: the mtime
    of each ``N.json``, pushed to previous + 1 ms when not increasing."""
    out: list[int] = []
    for version in _commit_versions(path):
        mtime = (path / "_delta_log" / f"{version:020d}.json").stat().st_mtime_ns // 1_000_000
        out.append(mtime if not out or mtime > out[-1] else out[-1] + 1)
    return out


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in TIMESTAMP_TABLES])
def test_time_travel_by_timestamp(name: str, golden_dir: Path) -> None:
    path = golden_dir / name
    table = _core_table(path)
    stamps = monotonic_commit_times(path)
    assert len(stamps) == table.latest_version() + 1
    for version, ts in enumerate(stamps):
        assert table.snapshot(timestamp=ts).version == version
        iso = dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc).isoformat()
        assert table.snapshot(timestamp=iso).version == version
        if version + 1 < len(stamps) and stamps[version + 1] - ts > 1:
            assert table.snapshot(timestamp=ts + 1).version == version
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=stamps[0] - 1)


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ("snapshot-data3", "basic-with-inserts-merge")])
def test_version_beyond_latest_is_not_found(name: str, golden_dir: Path) -> None:
    table = _core_table(golden_dir / name)
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=table.latest_version() + 1)


def test_checkpoint_only_table_refuses_versions_before_its_first_checkpoint(golden_dir: Path, tmp_path: Path) -> None:
    # Drop 0.json from a copy: version 0 can no longer be rebuilt, version 1+ can.
    copy = tmp_path / "t"
    shutil.copytree(golden_dir / "only-checkpoint-files", copy)
    (copy / "_delta_log" / "00000000000000000000.json").unlink()
    table = _core_table(copy)
    assert table.snapshot().version == 2
    assert table.snapshot(version=1).version == 1
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=0)


# --- Tables no oracle reads: expectations from the Scala suites ----------------


@pytest.mark.parametrize(
    "name, absolute",
    [
        pytest.param("canonicalized-paths-normal-a", "/some/unqualified/absolute/path", id="normal-a"),
        pytest.param("canonicalized-paths-normal-b", "/some/unqualified/absolute/path", id="normal-b"),
        pytest.param("canonicalized-paths-special-a", "/some/unqualified/with space/p@#h", id="special-a"),
        pytest.param("canonicalized-paths-special-b", "/some/unqualified/with space/p@#h", id="special-b"),
    ],
)
def test_canonicalized_paths(name: str, absolute: str, golden_dir: Path) -> None:
    """DeltaLogSuite "paths should be canonicalized": an add and a remove that
    spell one absolute path differently (``/p`` vs ``file:/p`` or
    ``file:///p``) are the same file, so version 1 has no live file."""
    table = _core_table(golden_dir / name)
    v0 = table.snapshot(version=0)
    assert [v0.file_path(a) for a in v0.files] == [absolute]
    latest = table.snapshot()
    assert latest.version == 1
    assert latest.files == []


def test_update_deleted_directory_reads_its_checkpoint(golden_dir: Path) -> None:
    """A checkpoint-and-commit at version 0 whose metaData has no schemaString."""
    path = golden_dir / "update-deleted-directory"
    snap = _core_table(path).snapshot()
    assert snap.version == 0
    checkpoint = pq.read_table(path / "_delta_log" / "00000000000000000000.checkpoint.parquet")
    expected = sorted(r["path"] for r in checkpoint.column("add").to_pylist() if r)
    assert sorted(a.path for a in snap.files) == expected == sorted(str(i) for i in range(1, 11))


def test_delete_re_add_keeps_the_newest_add(golden_dir: Path) -> None:
    snap = _core_table(golden_dir / "delete-re-add-same-file-different-transactions").snapshot()
    by_path = {a.path: a for a in snap.files}
    assert set(by_path) == {"foo", "bar"}
    assert by_path["foo"].modification_time == 1700000000000


def test_latest_metadata_and_protocol_win(golden_dir: Path) -> None:
    snap = _core_table(golden_dir / "log-replay-latest-metadata-protocol").snapshot()
    assert [f["name"] for f in snap.schema["fields"]] == ["col1", "col2"]
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (3, 7)
    assert snap.num_records == 40


# --- Protocol gates --------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in PROTOCOL_GATES])
def test_protocol_gate_names_the_feature(name: str, golden_dir: Path) -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        _core_table(golden_dir / name).snapshot()
    message = str(info.value)
    assert any(word in message for word in PROTOCOL_GATES[name]), message


# --- Writer-only features ----------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in WRITER_GATES])
def test_writer_gate_reads_but_refuses_writes(name: str, golden_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "t"
    shutil.copytree(golden_dir / name, copy)
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))

    table = _core_table(copy)
    snap = table.snapshot()
    rs = _rs_table(copy)
    assert snap.version == rs.version()
    assert sorted(a.path for a in snap.files) == sorted(rs.get_add_actions(flatten=True).column("path").to_pylist())

    with pytest.raises(UnsupportedFeatureError) as info:
        table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=snap)
    assert any(word in str(info.value) for word in WRITER_GATES[name]), str(info.value)
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before


def test_writer_seven_with_only_legacy_features_is_writable(golden_dir: Path, tmp_path: Path) -> None:
    """appendOnly and invariants are the two writer features we honour."""
    copy = tmp_path / "t"
    shutil.copytree(golden_dir / "log-replay-latest-metadata-protocol", copy)
    table = _core_table(copy)
    txn = table.transaction("WRITE", parameters={"mode": "Append"}, snapshot=table.snapshot())
    result = txn.commit(metrics={"numFiles": 0}, token="golden-writable")
    assert result.version == 3
    assert _rs_table(copy).version() == 3


# --- Damaged or odd logs -----------------------------------------------------------


def test_corrupted_last_checkpoint_falls_back_to_listing(golden_dir: Path, tmp_path: Path) -> None:
    """DeltaLogSuite "handle corrupted '_last_checkpoint' file"."""
    copy = tmp_path / "t"
    shutil.copytree(golden_dir / "corrupted-last-checkpoint", copy)
    last = copy / "_delta_log" / "_last_checkpoint"
    last.chmod(0o644)
    last.write_bytes(b'{"version":10,"si')  # torn in the middle
    snap = _core_table(copy).snapshot()
    assert snap.version == 10
    assert sorted(a.path for a in snap.files) == sorted(str(i) for i in range(11))


def test_corrupted_last_checkpoint_kernel(golden_dir: Path) -> None:
    """An empty ``_last_checkpoint`` (delta-kernel's variant of the table)."""
    path = golden_dir / "corrupted-last-checkpoint-kernel"
    snap = _core_table(path).snapshot()
    rs = _rs_table(path)
    assert snap.version == rs.version() == max(_commit_versions(path))
    assert sorted(a.path for a in snap.files) == sorted(rs.get_add_actions(flatten=True).column("path").to_pylist())


def test_versions_not_contiguous(golden_dir: Path) -> None:
    with pytest.raises((CorruptLogError, VersionNotFoundError)) as info:
        _core_table(golden_dir / "versions-not-contiguous").snapshot()
    # The message names the missing version (1), as 1 or as its file name.
    assert re.search(r"(?<!\d)0*1(?!\d)", str(info.value)), str(info.value)


def test_no_delta_log_folder(golden_dir: Path) -> None:
    table = _core_table(golden_dir / "no-delta-log-folder")
    assert table.exists() is False
    with pytest.raises(TableNotFoundError):
        table.snapshot()


@pytest.mark.parametrize(
    "name, missing",
    [
        pytest.param("deltalog-state-reconstruction-without-metadata", "metadata", id="without-metadata"),
        pytest.param("deltalog-state-reconstruction-without-protocol", "protocol", id="without-protocol"),
        pytest.param(
            "deltalog-state-reconstruction-from-checkpoint-missing-metadata", "metadata", id="checkpoint-no-metadata"
        ),
        pytest.param(
            "deltalog-state-reconstruction-from-checkpoint-missing-protocol", "protocol", id="checkpoint-no-protocol"
        ),
        # Two commits with adds but never a metaData action.
        pytest.param("data-reader-absolute-paths-escaped-chars", "metadata", id="absolute-paths-no-metadata"),
    ],
)
def test_state_reconstruction_names_the_missing_action(name: str, missing: str, golden_dir: Path) -> None:
    with pytest.raises(CorruptLogError) as info:
        _core_table(golden_dir / name).snapshot()
    assert missing in str(info.value).lower(), str(info.value)
