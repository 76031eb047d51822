"""Identity columns (``identityColumns``): tables created by our core with
``delta.identity.*`` field metadata; APPEND and MERGE generate values beyond
the high-water mark and commit the new mark; GENERATED ALWAYS refuses given
values; UPDATE and MERGE never change an identity value; concurrent appends
never hand out the same value. delta-rs and DuckDB read back what we wrote."""

from __future__ import annotations

import json
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import (
    IdentityHighWaterMarkConflictError,
    InvalidInputError,
    MetadataChangedError,
)
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import identity_columns as identity
from airflow_delta_provider.operations.append import spark as append_module
from tests.operations.dml.dml_support import commit_actions, data_files, state
from tests.operations.runs import run_append, run_merge, run_update
from tests.spark.arrow_support import arrow_workers  # noqa: F401 - the fixture

deltalake = pytest.importorskip("deltalake")


def create(path: str, start: int = 1, step: int = 1, always: bool = True, legacy: bool = False) -> str:
    """A table ``(id long identity, name string)`` written with our core:
    writer 6 (``legacy``) or writer 7 listing ``identityColumns``."""
    md = {identity.START: start, identity.STEP: step, identity.ALLOW_EXPLICIT_INSERT: not always}
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": md},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    txn = DeltaTable(path).transaction("CREATE TABLE", {"mode": "ErrorIfExists"}, None)
    txn.update_metadata(Metadata.new(schema_string(schema), [], {}, created_time=0))
    txn.update_protocol(
        Protocol(1, 6) if legacy else Protocol(1, 7, None, ("appendOnly", "identityColumns", "invariants"))
    )
    txn.commit()
    return path


def source(tmp_path, name: str, names: list[str], ids: list[int] | None = None, partitions: int = 1) -> str:
    """A parquet folder of ``partitions`` files (Spark reads one partition per file)."""
    folder = tmp_path / name
    folder.mkdir()
    chunk = -(-len(names) // partitions)
    for p in range(partitions):
        part = slice(p * chunk, (p + 1) * chunk)
        columns = {"name": pa.array(names[part], pa.string())}
        if ids is not None:
            columns = {"id": pa.array(ids[part], pa.int64()), **columns}
        pq.write_table(pa.table(columns), folder / f"part-{p}.parquet")
    return str(folder)


def rs_rows(path: str) -> list[tuple]:
    return sorted((r["id"], r["name"]) for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())


def mark(path: str, column: str = "id") -> int | None:
    field = next(f for f in DeltaTable(path).snapshot().schema["fields"] if f["name"] == column)
    return field["metadata"].get(identity.HIGH_WATER_MARK)


def test_append_generates_values_beyond_the_mark_and_commits_it(spark, tmp_path, duckdb_delta):
    path = create(str(tmp_path / "t"), start=10, step=5)
    names = [f"n{i}" for i in range(7)]
    run_append(spark, path, source(tmp_path, "a", names, partitions=3))  # three Spark partitions
    rows = rs_rows(path)
    ids = [r[0] for r in rows]
    assert len(set(ids)) == 7 and all(i >= 10 and (i - 10) % 5 == 0 for i in ids)
    assert mark(path) == max(ids)
    info = commit_actions(path)[0]["commitInfo"]
    assert info["tags"][identity.COMMIT_TAG] == "true"  # the mark is the only metadata change
    first = set(ids)
    run_append(spark, path, source(tmp_path, "b", ["x", "y"]))
    ids = [r[0] for r in rs_rows(path)]
    assert len(set(ids)) == 9 and min(set(ids) - first) > max(first)
    got = duckdb_delta.execute(f"SELECT count(DISTINCT id), count(*) FROM delta_scan('{path}')").fetchone()
    assert got == (9, 9)
    assert mark(path) == max(ids)


def test_negative_step(spark, tmp_path):
    path = create(str(tmp_path / "t"), start=-1, step=-3, legacy=True)
    run_append(spark, path, source(tmp_path, "a", ["a", "b", "c"], partitions=2))
    ids = sorted(r[0] for r in rs_rows(path))
    assert len(set(ids)) == 3 and all(i <= -1 and (i + 1) % 3 == 0 for i in ids)
    assert mark(path) == min(ids)
    run_append(spark, path, source(tmp_path, "b", ["d"]))
    new = min(r[0] for r in rs_rows(path))
    assert new < min(ids) and mark(path) == new
    assert DeltaTable(path).snapshot().protocol == Protocol(1, 6)


def test_generated_always_refuses_given_values_and_changes_nothing(spark, tmp_path):
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a"]))
    before = state(path)
    with pytest.raises(InvalidInputError, match="identity column id is GENERATED ALWAYS"):
        run_append(spark, path, source(tmp_path, "b", ["b"], ids=[100]))
    assert state(path) == before


def test_generated_by_default_takes_given_values_without_moving_the_mark(spark, tmp_path):
    path = create(str(tmp_path / "t"), always=False)
    run_append(spark, path, source(tmp_path, "a", ["a", "b"]))
    assert mark(path) == 2
    run_append(spark, path, source(tmp_path, "b", ["c"], ids=[100]))
    assert mark(path) == 2  # only generated values move it, as in delta-spark
    assert "metaData" not in {k for a in commit_actions(path) for k in a}
    run_append(spark, path, source(tmp_path, "c", ["d"]))
    assert rs_rows(path) == [(1, "a"), (2, "b"), (3, "d"), (100, "c")]


def test_update_of_an_identity_column_is_refused(spark, tmp_path):
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a", "b"]))
    before = state(path)
    with pytest.raises(InvalidInputError, match=r"cannot set identity column\(s\) id"):
        run_update(spark, path, "name = 'a'", {"ID": "id + 10"})
    assert state(path) == before
    run_update(spark, path, "name = 'a'", {"name": "'z'"})  # other columns update as usual
    assert rs_rows(path) == [(1, "z"), (2, "b")]


def test_merge_inserts_get_identity_values_and_updates_keep_them(spark, tmp_path, duckdb_delta):
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a", "b"]))
    src = source(tmp_path, "s", ["b", "c", "d"])
    clauses = [{"when": "matched", "update": {"name": "upper(s.name)"}}, {"when": "not_matched", "insert": "*"}]
    run_merge(spark, path, src, "t.name = s.name", clauses)
    rows = rs_rows(path)
    assert rows[:2] == [(1, "a"), (2, "B")]
    new = sorted(r[0] for r in rows[2:])
    assert len(set(new)) == 2 and min(new) > 2 and mark(path) == max(new)
    assert duckdb_delta.execute(f"SELECT count(DISTINCT id) FROM delta_scan('{path}')").fetchone() == (4,)
    before = state(path)
    with pytest.raises(InvalidInputError, match="cannot set identity column"):
        run_merge(spark, path, src, "t.name = s.name", [{"when": "matched", "update": {"id": "1"}}])
    with pytest.raises(InvalidInputError, match="GENERATED ALWAYS"):
        run_merge(
            spark, path, src, "t.name = s.name", [{"when": "not_matched", "insert": {"id": "7", "name": "s.name"}}]
        )
    assert state(path) == before


def test_an_append_losing_the_race_for_the_mark_recomputes_its_values(spark, tmp_path, monkeypatch):
    """A concurrent append commits a new mark between our write and our
    commit: ours is a metadata conflict (as in delta-spark), and runs again
    on top of the winner, with new values; both commits land, no value twice."""
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "seed", ["seed"]))
    real = append_module.write_files
    raced = []

    def write_then_race(*args, **kwargs):
        adds = real(*args, **kwargs)
        if not raced:
            raced.append(True)
            monkeypatch.setattr(append_module, "write_files", real)
            run_append(spark, path, source(tmp_path, "winner", ["w1", "w2"]))
            monkeypatch.setattr(append_module, "write_files", write_then_race)
        return adds

    monkeypatch.setattr(append_module, "write_files", write_then_race)
    result = run_append(spark, path, source(tmp_path, "loser", ["l1", "l2"]))
    assert result.version == 3
    rows = rs_rows(path)
    assert len(rows) == 5 and len({r[0] for r in rows}) == 5
    assert mark(path) == max(r[0] for r in rows)
    assert len(data_files(path)) == 3  # the loser's first files were deleted


def test_without_retries_the_loser_fails_and_leaves_nothing(spark, tmp_path, monkeypatch):
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "seed", ["seed"]))
    monkeypatch.setattr(append_module, "IDENTITY_ATTEMPTS", 1)
    real = append_module.write_files

    def write_then_race(*args, **kwargs):
        adds = real(*args, **kwargs)
        monkeypatch.setattr(append_module, "write_files", real)
        run_append(spark, path, source(tmp_path, "winner", ["w"]))
        return adds

    monkeypatch.setattr(append_module, "write_files", write_then_race)
    with pytest.raises(IdentityHighWaterMarkConflictError, match="generated identity values") as err:
        run_append(spark, path, source(tmp_path, "loser", ["l"]))
    assert isinstance(err.value, MetadataChangedError)  # delta-spark's conflict, named more precisely
    assert rs_rows(path) == [(1, "seed"), (2, "w")]
    assert len(data_files(path)) == 2


def test_two_threads_appending_never_share_a_value(spark, tmp_path):
    path = create(str(tmp_path / "t"))
    sources = [source(tmp_path, f"s{i}", [f"t{i}-{j}" for j in range(5)], partitions=2) for i in range(2)]
    errors: list[BaseException] = []

    def work(src: str) -> None:
        try:
            run_append(spark, path, src)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = rs_rows(path)
    assert len(rows) == 10 and len({r[0] for r in rows}) == 10
    assert mark(path) == max(r[0] for r in rows)


def test_the_high_water_mark_is_read_from_the_files_beyond_the_stats_columns(spark, tmp_path):
    """With stats on ``name`` only, the mark comes from the written files themselves."""
    path = create(str(tmp_path / "t"))
    run_append(
        spark,
        path,
        source(tmp_path, "a", ["a", "b", "c"]),
        table_properties={"delta.dataSkippingStatsColumns": "name"},
    )
    stats = json.loads(next(a["add"]["stats"] for a in commit_actions(path) if "add" in a))
    assert "id" not in stats["maxValues"]
    assert mark(path) == 3


@pytest.mark.usefixtures("arrow_workers")
def test_arrow_io_generates_values_too(spark, tmp_path):
    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a", "b", "c", "d"], partitions=2), io="arrow")
    ids = sorted(r[0] for r in rs_rows(path))
    assert len(set(ids)) == 4 and mark(path) == max(ids)


DECLARED = {
    "type": "struct",
    "fields": [
        {
            "name": "id",
            "type": "long",
            "nullable": False,
            "metadata": {
                "delta.identity.start": 100,
                "delta.identity.step": 10,
                "delta.identity.allowExplicitInsert": False,
            },
        },
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {
            "name": "upper",
            "type": "string",
            "nullable": True,
            "metadata": {"delta.generationExpression": "upper(name)"},
        },
    ],
}


def test_append_creates_a_table_from_a_declared_schema(spark, tmp_path, duckdb_delta):
    """APPEND's table_schema: generated and identity columns the source leaves
    out; the protocol goes to writer 7 with both features, as delta-spark's."""
    path = str(tmp_path / "new")
    run_append(spark, path, source(tmp_path, "a", ["a", "b"]), table_schema=json.dumps(DECLARED))
    snap = DeltaTable(path).snapshot()
    assert {"generatedColumns", "identityColumns"} <= set(snap.protocol.writer_features or ())
    assert snap.protocol.min_reader_version == 1
    assert snap.schema["fields"][0]["nullable"] is False
    got = duckdb_delta.execute(f"SELECT id, name, upper FROM delta_scan('{path}') ORDER BY name").fetchall()
    assert sorted(r[0] for r in got) == [100, 110] and [r[1:] for r in got] == [("a", "A"), ("b", "B")]
    assert mark(path) == 110
    rows = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted(r["upper"] for r in rows) == ["A", "B"]


@pytest.mark.parametrize(
    "declared, message",
    [
        ("{not json", "not JSON"),
        ({"type": "struct"}, "must be a Delta schema"),
        ({"type": "struct", "fields": [{"name": "name", "type": "nosuch"}]}, "invalid table schema"),
        ({"type": "struct", "fields": [{"name": "other", "type": "long"}]}, "Schema mismatch"),
    ],
)
def test_a_bad_declared_schema_is_refused_before_anything_is_written(spark, tmp_path, declared, message):
    from airflow_delta_provider.delta.errors import SchemaMismatchError

    path = tmp_path / "new"
    with pytest.raises((InvalidInputError, SchemaMismatchError), match=message):
        run_append(spark, str(path), source(tmp_path, "a", ["a"]), table_schema=declared)
    assert not path.exists() or not any(path.rglob("*.parquet"))
    assert not (path / "_delta_log").exists() or not any((path / "_delta_log").iterdir())


def test_a_declared_schema_for_an_existing_table_is_refused(spark, tmp_path):
    path = create(str(tmp_path / "t"))
    before = state(path)
    with pytest.raises(InvalidInputError, match="only for a table this APPEND creates"):
        run_append(spark, path, source(tmp_path, "a", ["a"]), table_schema=DECLARED)
    assert state(path) == before


def test_merge_inserting_identity_values_into_a_change_data_feed_table_is_refused(spark, tmp_path):
    from airflow_delta_provider.delta.errors import UnsupportedFeatureError

    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a"]), table_properties={"delta.enableChangeDataFeed": "true"})
    before = state(path)
    clauses = [{"when": "matched", "delete": True}, {"when": "not_matched", "insert": "*"}]
    with pytest.raises(UnsupportedFeatureError, match="enableChangeDataFeed"):
        run_merge(spark, path, source(tmp_path, "s", ["b"]), "t.name = s.name", clauses)
    assert state(path) == before
    # an insert-only MERGE records its inserts by its adds: allowed
    run_merge(spark, path, source(tmp_path, "s2", ["b"]), "t.name = s.name", [{"when": "not_matched", "insert": "*"}])
    assert rs_rows(path) == [(1, "a"), (2, "b")]
    rows = pa.RecordBatchReader.from_stream(deltalake.DeltaTable(path).load_cdf(starting_version=2)).read_all()
    assert rows.to_pylist()[0]["id"] == 2 and rows.to_pylist()[0]["_change_type"] == "insert"
    run_update(spark, path, "name = 'a'", {"name": "'z'"})  # other changes record their rows as usual
    assert rs_rows(path) == [(1, "z"), (2, "b")]


def test_restore_keeps_the_high_water_mark(spark, tmp_path):
    from airflow_delta_provider.operations.restore.plan import restore_table

    path = create(str(tmp_path / "t"))
    run_append(spark, path, source(tmp_path, "a", ["a", "b"]))
    run_append(spark, path, source(tmp_path, "b", ["c", "d"]))
    assert mark(path) == 4
    restore_table(DeltaTable(path), version=1)
    assert mark(path) == 4 and [r[0] for r in rs_rows(path)] == [1, 2]
    run_append(spark, path, source(tmp_path, "c", ["e"]))
    assert rs_rows(path) == [(1, "a"), (2, "b"), (5, "e")]  # 3 and 4 are never handed out again


def test_replace_where_gives_the_new_rows_fresh_identity_values(spark, tmp_path, duckdb_delta):
    """A reload keeps the rows outside the predicate with their ids, and the
    new rows get values beyond the mark, which the same commit moves."""
    path = create(str(tmp_path / "t"), start=1, step=1)
    run_append(spark, path, source(tmp_path, "a", ["keep1", "keep2", "old1", "old2"]))
    before = dict((name, id_) for id_, name in rs_rows(path))
    first_mark = mark(path)

    result = run_append(
        spark, path, source(tmp_path, "b", ["old3", "old4", "old5"]), mode="overwrite",
        replace_where="name LIKE 'old%'",
    )  # fmt: skip

    rows = rs_rows(path)
    assert result.version == 2 and DeltaTable(path).latest_version() == 2  # one commit
    assert {name: id_ for id_, name in rows if name.startswith("keep")} == {k: before[k] for k in ("keep1", "keep2")}
    new_ids = sorted(id_ for id_, name in rows if name.startswith("old"))
    assert len(new_ids) == 3 and min(new_ids) > first_mark
    assert mark(path) == max(new_ids)
    got = duckdb_delta.execute(f"SELECT count(DISTINCT id), count(*) FROM delta_scan('{path}')").fetchone()
    assert got == (5, 5)
    # GENERATED ALWAYS: a reload that gives the ids is refused, as any append is, and changes nothing.
    with pytest.raises(InvalidInputError, match="identity column id is GENERATED ALWAYS"):
        run_append(
            spark, path, source(tmp_path, "c", ["old6"], ids=[99]), mode="overwrite", replace_where="name = 'old6'"
        )
    assert rs_rows(path) == rows
