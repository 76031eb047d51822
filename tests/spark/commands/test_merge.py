"""MERGE (spark/commands/merge/): the same rows and counts as deltalake's own
``merge()`` on an identical copy, for each combination of clauses; bad input
changes nothing; the fast paths rewrite only what they must; conflicts follow
the table's isolation level, as in delta-spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    ConcurrentAppendError,
    InvalidInputError,
    InvariantViolationError,
    MultipleSourceMatchesError,
    SchemaMismatchError,
)
from airflow_delta_provider.delta.operations.merge_clauses import parse_clauses
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.spark.commands.merge.command import run_merge
from airflow_delta_provider.spark.commands.merge.commit import commit
from airflow_delta_provider.spark.commands.merge.files import KeptFrames
from airflow_delta_provider.spark.commands.merge.plan import MergePlan, plan_merge
from airflow_delta_provider.spark.commands.merge.rewrite import rewrite
from airflow_delta_provider.spark.commands.merge.touched import find_touched_files
from airflow_delta_provider.spark.commands.source import Source
from airflow_delta_provider.spark.write.files import WrittenFiles

from .dml_support import (
    deltalake_table,
    last_commit,
    rows_deltalake,
    rows_duckdb,
    state,
    twin,
)

pytest.importorskip("deltalake")

ON = "t.id = s.id"


def source_rows(ids: list[int | None], *, extra: bool = False) -> pa.Table:
    """Source rows shaped like the target's (sample_rows): ids 0..59 exist there."""
    n = len(ids)
    columns = {
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"s{i}" if i is not None and i % 5 else None for i in ids], pa.string()),
        "part": pa.array(["a" if (i or 0) % 2 else "b" for i in ids], pa.string()),
        "val": pa.array([-1.0 if (i or 0) % 4 == 0 else 100.0 + k for k, i in enumerate(ids)], pa.float64()),
    }
    if extra:
        columns["extra"] = pa.array([f"x{k}" for k in range(n)], pa.string())
    return pa.table(columns)


def plan(spark, path: str, source: str, on: str, clauses: list[dict]) -> MergePlan:
    """The MERGE's plan (its persisted source released at once: these tests read the plan only)."""
    with KeptFrames() as keep:
        return plan_merge(spark, path, Source(spark, path=source), on, clauses, keep=keep)


def write_source(tmp_path: Path, table: pa.Table, name: str = "source") -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    return str(folder)


def deltalake_merge(path: str, source: pa.Table, clauses: list[dict], merge_schema: bool = False, on: str = ON) -> dict:
    """The same MERGE through deltalake's TableMerger."""
    from deltalake import DeltaTable as RsTable

    merger = RsTable(path).merge(source, on, source_alias="s", target_alias="t", merge_schema=merge_schema)
    for c in parse_clauses(clauses):
        star = c.assignments is None
        kw = {"predicate": c.condition}
        if c.when == "matched" and c.action == "update":
            merger = merger.when_matched_update_all(**kw) if star else merger.when_matched_update(c.assignments, **kw)
        elif c.when == "matched":
            merger = merger.when_matched_delete(**kw)
        elif c.when == "not_matched":
            merger = (
                merger.when_not_matched_insert_all(**kw)
                if star
                else merger.when_not_matched_insert(c.assignments, **kw)
            )
        elif c.action == "update":
            merger = merger.when_not_matched_by_source_update(c.assignments, **kw)
        else:
            merger = merger.when_not_matched_by_source_delete(**kw)
    return merger.execute()


UPSERT = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]
CASES = {
    "update-only": [{"when": "matched", "update": {"val": "s.val", "name": "s.name"}}],
    "delete-only": [{"when": "matched", "delete": True}],
    "insert-only": [{"when": "not_matched", "insert": "*"}],
    "insert-explicit": [{"when": "not_matched", "insert": {"id": "s.id", "val": "s.val * 2", "part": "'new'"}}],
    "update-insert": UPSERT,
    "conditional-all-three": [
        {"when": "matched", "condition": "s.val < 0", "delete": True},
        {"when": "matched", "condition": "t.part = 'a'", "update": {"val": "t.val + s.val"}},
        {"when": "not_matched", "condition": "s.id % 2 = 0", "insert": "*"},
    ],
    "not-matched-by-source-delete": [
        {"when": "matched", "update": "*"},
        {"when": "not_matched_by_source", "condition": "t.id < 30", "delete": True},
    ],
    "not-matched-by-source-update": [
        {"when": "not_matched_by_source", "condition": "t.part = 'b'", "update": {"name": "'orphan'"}},
        {"when": "not_matched", "insert": "*"},
    ],
}
SOURCE_IDS = {
    "some": [3, 4, 17, 40, 41, 60, 61, 62],  # 5 matches (in 2 of 3 files), 3 new
    "null-keys": [None, None, 5, 70],  # NULL keys never match
    "empty": [],
}


#: Every clause set on the usual source; the NULL-key and empty sources with two of them.
COMBINATIONS = [(case, "some") for case in CASES] + [
    (case, source) for source in ("null-keys", "empty") for case in ("update-insert", "not-matched-by-source-delete")
]


@pytest.mark.parametrize("partition_by", [None, ["part"]], ids=["unpartitioned", "partitioned"])
@pytest.mark.parametrize("case, source", COMBINATIONS, ids=[f"{c}-{s}" for c, s in COMBINATIONS])
def test_merge_matches_deltalake(spark, tmp_path, duckdb_delta, partition_by, source, case):
    ours, theirs = twin(deltalake_table(tmp_path / "src", partition_by), tmp_path)
    data = source_rows(SOURCE_IDS[source])
    before = state(ours)
    result = run_merge(spark, ours, write_source(tmp_path, data), ON, CASES[case], token="tok-m")
    expected = deltalake_merge(theirs, data, CASES[case])

    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
    m = result.metrics
    for ours_key, theirs_key in (
        ("numSourceRows", "num_source_rows"),
        ("numTargetRowsInserted", "num_target_rows_inserted"),
        ("numTargetRowsUpdated", "num_target_rows_updated"),
        ("numTargetRowsDeleted", "num_target_rows_deleted"),
    ):
        assert m[ours_key] == expected[theirs_key], ours_key
    changed = m["numTargetRowsInserted"] + m["numTargetRowsUpdated"] + m["numTargetRowsDeleted"]
    if not changed:
        assert result.version is None and state(ours) == before
        return
    assert result.version == before[0] + 1
    commit = last_commit(ours)
    assert commit["operation"] == "MERGE"
    assert commit["operationParameters"]["predicate"] == json.dumps([ON])
    assert commit["tags"]["airflow.operationToken"] == "tok-m"
    assert commit["operationMetrics"]["numTargetRowsInserted"] == str(m["numTargetRowsInserted"])
    assert m["numOutputRows"] == m["numTargetRowsCopied"] + m["numTargetRowsUpdated"] + m["numTargetRowsInserted"]


@pytest.mark.parametrize(
    "on",
    [
        "t.id = s.id AND s.val > 0",  # a source-only conjunct: not an equi-join, so one full outer join
        "t.id = s.id AND t.part = 'a'",  # a target-only conjunct: still an equi-join
        "t.id + 0 = s.id",  # not understood at all: no pruning, full outer join
    ],
)
def test_other_join_conditions_match_deltalake(spark, tmp_path, duckdb_delta, on):
    ours, theirs = twin(deltalake_table(tmp_path / "src", ["part"]), tmp_path)
    data = source_rows(SOURCE_IDS["some"])
    clauses = [
        {"when": "matched", "condition": "t.id > 10", "update": "*"},
        {"when": "not_matched", "insert": "*"},
    ]
    result = run_merge(spark, ours, write_source(tmp_path, data), on, clauses)
    expected = deltalake_merge(theirs, data, clauses, on=on)
    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
    assert result.metrics["numTargetRowsInserted"] == expected["num_target_rows_inserted"]
    assert result.metrics["numTargetRowsUpdated"] == expected["num_target_rows_updated"]


def test_schema_evolution_with_star_matches_deltalake(spark, tmp_path, duckdb_delta):
    ours, theirs = twin(deltalake_table(tmp_path / "src"), tmp_path)
    data = source_rows(SOURCE_IDS["some"], extra=True)
    result = run_merge(spark, ours, write_source(tmp_path, data), ON, UPSERT, merge_schema=True)
    deltalake_merge(theirs, data, UPSERT, merge_schema=True)
    assert [f["name"] for f in DeltaTable(ours).snapshot().schema["fields"]][-1] == "extra"
    assert rows_deltalake(ours) == rows_deltalake(theirs)
    assert rows_duckdb(duckdb_delta, ours) == rows_deltalake(theirs)
    assert result.metrics["numTargetRowsInserted"] == 3


def test_insert_only_rewrites_nothing(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", batches=4)
    files = {f.path for f in DeltaTable(path).snapshot().files}
    result = run_merge(spark, path, write_source(tmp_path, source_rows([1, 2, 100, 101])), ON, CASES["insert-only"])
    assert result.metrics["numTargetFilesRemoved"] == 0
    assert result.metrics["numTargetRowsInserted"] == 2
    assert files <= {f.path for f in DeltaTable(path).snapshot().files}


def test_only_touched_files_are_rewritten(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", batches=4)  # ids 0..14, 15..29, 30..44, 45..59
    result = run_merge(spark, path, write_source(tmp_path, source_rows([16, 20, 200])), ON, UPSERT)
    m = result.metrics
    assert m["numTargetFilesRemoved"] == 1
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numTargetRowsCopied"]) == (2, 1, 13)


def test_source_key_range_prunes_target_files(spark, tmp_path):
    """Keys 16..20 lie in the second file only: the touched-file scan reads just that file."""
    path = deltalake_table(tmp_path / "t", batches=4)
    candidates = plan(spark, path, write_source(tmp_path, source_rows([16, 20])), ON, UPSERT).candidates.files
    assert len(candidates) == 1
    assert candidates[0].num_records == 15


def test_source_keys_prune_files_one_by_one(spark, tmp_path):
    """Keys 16 and 50 span files 2 to 4 by their min and max, but file 3 (30..44) holds neither."""
    path = deltalake_table(tmp_path / "t", batches=4)
    planned = plan(spark, path, write_source(tmp_path, source_rows([16, 50, None])), ON, UPSERT)
    bounds = sorted(
        (f.parsed_stats()["minValues"]["id"], f.parsed_stats()["maxValues"]["id"]) for f in planned.candidates.files
    )
    assert bounds == [(15, 29), (45, 59)]
    assert [str(p) for p in planned.txn._read_predicates] == [
        "(`id` >= 16 AND `id` <= 50)"
    ]  # conflicts judge the range


def test_target_only_conjunct_prunes_partitions(spark, tmp_path):
    path = deltalake_table(tmp_path / "t", ["part"])
    on = "t.id = s.id AND t.part = 'a'"
    candidates = plan(spark, path, write_source(tmp_path, source_rows([1, 2, 3])), on, UPSERT).candidates.files
    assert candidates and {f.partition_values["part"] for f in candidates} == {"a"}


def test_untouched_matched_file_is_not_rewritten_and_its_match_not_inserted(spark, tmp_path):
    """Id 3 matches, but the update's condition is false for it: its file
    stays, and id 3 is not inserted as if it had matched nothing."""
    path = deltalake_table(tmp_path / "t", batches=4)
    clauses = [
        {"when": "matched", "condition": "t.id > 15", "update": {"val": "0"}},
        {"when": "not_matched", "insert": "*"},
    ]
    result = run_merge(spark, path, write_source(tmp_path, source_rows([3, 16, 300])), ON, clauses)
    m = result.metrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numTargetFilesRemoved"]) == (1, 1, 1)
    from deltalake import DeltaTable as RsTable

    ids = sorted(RsTable(path).to_pyarrow_table()["id"].to_pylist())
    assert ids.count(3) == 1 and 300 in ids and len(ids) == 61


def test_multiple_matches_are_refused_with_the_key(spark, tmp_path):
    path = deltalake_table(tmp_path / "t")
    before = state(path)
    with pytest.raises(MultipleSourceMatchesError, match=r"id=7.*matched by 2 source rows"):
        run_merge(spark, path, write_source(tmp_path, source_rows([7, 7, 8])), ON, UPSERT)
    assert state(path) == before


def _rows(*rows: tuple) -> pa.Table:
    """Source rows (id, name, part, val), written out."""
    ids, names, parts, vals = zip(*rows)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array(names, pa.string()),
            "part": pa.array(parts, pa.string()),
            "val": pa.array(vals, pa.float64()),
        }
    )


def test_multiple_matches_are_allowed_when_every_matched_clause_deletes(spark, tmp_path, duckdb_delta):
    """Id 8 has two source rows, one of them meeting the delete condition: it
    goes. Id 12's two rows both miss it: it stays, once. NMBS and inserts act
    on the others as usual."""
    ours = deltalake_table(tmp_path / "src")
    clauses = [
        {"when": "matched", "condition": "s.val < 0", "delete": True},
        {"when": "not_matched_by_source", "condition": "t.id > 55", "update": {"name": "'gone'"}},
        {"when": "not_matched", "insert": "*"},
    ]
    data = _rows((8, "x", "a", -1.0), (8, "y", "a", 5.0), (9, "z", "a", -1.0), (12, "p", "a", 1.0),
                 (12, "q", "a", 2.0), (99, "new", "b", 3.0))  # fmt: skip
    result = run_merge(spark, ours, write_source(tmp_path, data), ON, clauses)
    m = result.metrics
    assert (m["numTargetRowsDeleted"], m["numTargetRowsInserted"], m["numTargetRowsUpdated"]) == (2, 1, 4)
    ids = sorted(r[0] for r in rows_duckdb(duckdb_delta, ours))
    assert 8 not in ids and 9 not in ids and ids.count(12) == 1 and 99 in ids and len(ids) == 59
    names = {r[0]: r[1] for r in rows_duckdb(duckdb_delta, ours)}
    assert names[57] == "gone" and names[12] == "n12"


def test_duplicate_source_keys_do_not_matter_without_matched_clauses(spark, tmp_path, duckdb_delta):
    ours = deltalake_table(tmp_path / "src")
    clauses = [
        {"when": "not_matched_by_source", "condition": "t.id < 3", "delete": True},
        {"when": "not_matched", "insert": "*"},
    ]
    data = _rows((5, "x", "a", 1.0), (5, "y", "a", 2.0), (70, "n", "b", 3.0), (70, "m", "b", 4.0))
    result = run_merge(spark, ours, write_source(tmp_path, data), ON, clauses)
    assert (result.metrics["numTargetRowsDeleted"], result.metrics["numTargetRowsInserted"]) == (3, 2)
    ids = sorted(r[0] for r in rows_duckdb(duckdb_delta, ours))
    assert ids.count(5) == 1 and ids.count(70) == 2 and len(ids) == 59


@pytest.mark.parametrize(
    "clauses",
    [
        # Only one of id 7's two rows meets the update's condition: still refused (delta-spark).
        [{"when": "matched", "condition": "s.val > 0", "update": "*"}, {"when": "not_matched", "insert": "*"}],
        # A delete and an update for the same row.
        [{"when": "matched", "condition": "s.val < 0", "delete": True}, {"when": "matched", "update": "*"}],
    ],
    ids=["one-acting-match", "delete-and-update"],
)
def test_mixed_multiple_matches_are_refused(spark, tmp_path, clauses):
    path = deltalake_table(tmp_path / "t")
    before = state(path)
    data = _rows((7, "x", "a", -1.0), (7, "y", "a", 5.0), (70, "n", "b", 3.0))
    with pytest.raises(MultipleSourceMatchesError, match=r"id=7.*matched by 2 source rows"):
        run_merge(spark, path, write_source(tmp_path, data), ON, clauses)
    assert state(path) == before


def test_star_matches_struct_fields_by_name(spark, tmp_path):
    """A source struct with the table's fields in another order: each field
    lands in its namesake, not by position."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    point = pa.struct([("x", pa.int64()), ("y", pa.int64())])
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array([{"x": 1, "y": 2}] * 2, point)}))
    swapped = pa.struct([("y", pa.int64()), ("x", pa.int64())])
    data = pa.table(
        {"id": pa.array([2, 3], pa.int64()), "p": pa.array([{"y": 20, "x": 10}, {"y": 30, "x": 40}], swapped)}
    )
    run_merge(spark, path, write_source(tmp_path, data), ON, UPSERT)
    rows = sorted(RsTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "p": {"x": 1, "y": 2}},
        {"id": 2, "p": {"x": 10, "y": 20}},
        {"id": 3, "p": {"x": 40, "y": 30}},
    ]


def test_nested_schema_evolution_keeps_old_rows(spark, tmp_path):
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    point = pa.struct([("x", pa.int64())])
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array([{"x": 1}, {"x": 2}], point)}))
    wider = pa.struct([("x", pa.int64()), ("z", pa.string())])
    data = pa.table({"id": pa.array([2], pa.int64()), "p": pa.array([{"x": 20, "z": "new"}], wider)})
    run_merge(spark, path, write_source(tmp_path, data), ON, UPSERT, merge_schema=True)
    rows = sorted(RsTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "p": {"x": 1, "z": None}}, {"id": 2, "p": {"x": 20, "z": "new"}}]


@pytest.mark.parametrize(
    "on, clauses, error, match",
    [
        (ON, [{"when": "matched", "update": {"nosuch": "s.val"}}], InvalidInputError, "unknown column 'nosuch'"),
        (ON, [{"when": "matched", "update": {"val": "s.nosuch"}}], InvalidInputError, "expression for val"),
        (ON, [{"when": "matched", "update": {"val": "val"}}], InvalidInputError, "AMBIGUOUS"),
        ("id = s.id", UPSERT, InvalidInputError, "AMBIGUOUS"),
        (ON, [{"when": "not_matched", "insert": {"id": "t.id"}}], InvalidInputError, "sees only the source"),
        (ON, [{"when": "matched", "condition": "s.val", "delete": True}], InvalidInputError, "not boolean"),
        ("t.id + s.id", UPSERT, InvalidInputError, "BOOLEAN"),
        (ON, [{"when": "matched", "delete": True}, {"when": "matched", "update": "*"}], InvalidInputError, "last"),
        (ON, [{"when": "sometimes", "delete": True}], InvalidInputError, "when must be"),
        ("t.id = s.id AND rand() > 0.5", UPSERT, InvalidInputError, "deterministic.*rand"),
        (
            ON,
            [{"when": "not_matched_by_source", "condition": "part = 'a'", "delete": True}],
            InvalidInputError,
            "qualify with t. or s.",
        ),
    ],
    ids=[
        "unknown-target-column",
        "unknown-source-column",
        "ambiguous-in-clause",
        "ambiguous-in-on",
        "insert-reads-target",
        "non-boolean-condition",
        "non-boolean-on",
        "unconditional-not-last",
        "unknown-kind",
        "nondeterministic",
        "unqualified-beside-the-source",
    ],
)
def test_bad_input_changes_nothing(spark, tmp_path, on, clauses, error, match):
    path = deltalake_table(tmp_path / "t")
    source = write_source(tmp_path, source_rows([1, 2, 70]))
    before = state(path)
    with pytest.raises(error, match=match):
        run_merge(spark, path, source, on, clauses)
    assert state(path) == before


def test_source_schema_mismatch_without_merge_schema(spark, tmp_path):
    path = deltalake_table(tmp_path / "t")
    source = write_source(tmp_path, source_rows([1, 70], extra=True))
    before = state(path)
    with pytest.raises(SchemaMismatchError, match="extra"):
        run_merge(spark, path, source, ON, UPSERT)
    assert state(path) == before


def test_star_takes_a_source_type_that_fits_the_column(spark, tmp_path):
    """An int source key into the table's long column merges (delta-spark casts it too)."""
    path = deltalake_table(tmp_path / "t")
    data = source_rows([5, 80])
    data = data.set_column(0, "id", data.column("id").cast(pa.int32()))
    result = run_merge(spark, path, write_source(tmp_path, data), ON, UPSERT)
    assert (result.metrics["numTargetRowsUpdated"], result.metrics["numTargetRowsInserted"]) == (1, 1)
    assert DeltaTable(path).snapshot().schema["fields"][0]["type"] == "long"


def test_explicit_clauses_ignore_extra_source_columns(spark, tmp_path):
    path = deltalake_table(tmp_path / "t")
    source = write_source(tmp_path, source_rows([1, 70], extra=True))
    clauses = [{"when": "matched", "update": {"name": "s.extra"}}]
    result = run_merge(spark, path, source, ON, clauses)
    assert result.metrics["numTargetRowsUpdated"] == 1


def test_not_null_violation_commits_nothing(spark, tmp_path):
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    write_deltalake(path, pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))
    assert DeltaTable(path).snapshot().schema["fields"][0]["nullable"] is False
    source = write_source(tmp_path, pa.table({"id": pa.array([1, 3], pa.int64()), "name": ["x", "y"]}))
    before = state(path)
    clauses = [{"when": "not_matched", "insert": {"name": "s.name"}}]  # id NULL
    with pytest.raises(InvariantViolationError):
        run_merge(spark, path, source, ON, clauses)
    assert state(path) == before


def test_append_only_table_takes_inserts_only(spark, tmp_path):
    from airflow_delta_provider.spark.commands.metadata.alter import run_alter

    path = deltalake_table(tmp_path / "t")
    run_alter(spark, path, {"set_properties": {"delta.appendOnly": "true"}}, False, None)
    source = write_source(tmp_path, source_rows([1, 70]))
    before = state(path)
    with pytest.raises(AppendOnlyViolationError):
        run_merge(spark, path, source, ON, UPSERT)
    assert state(path) == before
    result = run_merge(spark, path, source, ON, CASES["insert-only"])
    assert result.metrics["numTargetRowsInserted"] == 1


def test_delta_source_at_a_version(spark, tmp_path):
    from deltalake import write_deltalake

    path = deltalake_table(tmp_path / "t")
    src = str(tmp_path / "delta-source")
    write_deltalake(src, source_rows([1, 70]))
    write_deltalake(src, source_rows([2, 71]), mode="append")
    result = run_merge(spark, path, src, ON, UPSERT, source_format="delta", source_version=0)
    assert (result.metrics["numSourceRows"], result.metrics["numTargetRowsInserted"]) == (2, 1)


def test_merge_into_deletion_vector_table(spark, tmp_path, duckdb_delta):
    """A table with deletion vectors: rows its vectors hide neither match nor come back."""
    from airflow_delta_provider.spark.commands.append import run_append
    from airflow_delta_provider.spark.commands.delete import run_delete

    path = str(tmp_path / "dv")
    seed = write_source(tmp_path, source_rows(list(range(20))), "seed")
    run_append(spark, path, seed, "parquet", table_properties={"delta.enableDeletionVectors": "true"})
    run_delete(spark, path, "id = 3", None)
    marked = {f.path for f in DeltaTable(path).snapshot().files if f.deletion_vector is not None}
    assert marked
    result = run_merge(spark, path, write_source(tmp_path, source_rows([3, 4, 500])), ON, UPSERT)
    ids = sorted(r[0] for r in rows_duckdb(duckdb_delta, path))
    assert result.metrics["numTargetRowsInserted"] == 2  # 3 was deleted: it is new again
    assert (result.metrics["numTargetRowsUpdated"], len(ids)) == (1, 21)
    assert ids.count(3) == 1 and ids.count(4) == 1 and 500 in ids
    # delta-spark's vector metrics: the rewrite writes no vector and drops those of the files it removes.
    left = {f.path for f in DeltaTable(path).snapshot().files}
    m = result.metrics
    assert (m["numTargetDeletionVectorsAdded"], m["numTargetDeletionVectorsUpdated"]) == (0, 0)
    assert m["numTargetDeletionVectorsRemoved"] == len(marked - left) > 0
    assert m["materializeSourceTimeMs"] >= 0


def test_concurrent_append_conflicts_with_a_merge_unless_the_table_is_write_serializable(spark, tmp_path):
    """An append that lands between MERGE's read and its commit: a conflict at
    delta-spark's default isolation level (``Serializable``, whatever the
    clauses: an update-only MERGE used to let it through, where delta-spark
    raises ConcurrentAppendException); with ``delta.isolationLevel`` set to
    ``WriteSerializable`` the blind append goes through."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    cases = ((UPSERT, None, True), (CASES["update-only"], None, True), (CASES["update-only"], "WriteSerializable", False))
    for n, (clauses, level, conflicts) in enumerate(cases):
        path = deltalake_table(tmp_path / f"t{n}")
        if level:
            RsTable(path).alter.set_table_properties({"delta.isolationLevel": level})
        source = write_source(tmp_path, source_rows([1, 70]), f"s{n}")
        with KeptFrames() as keep:
            planned = plan_merge(spark, path, Source(spark, path=source), ON, clauses, keep=keep)
            ledger = WrittenFiles(planned.target.table.storage, [])
            rewritten = rewrite(planned, find_touched_files(planned, keep), ledger)
            write_deltalake(path, source_rows([500]), mode="append")
            if conflicts:
                with pytest.raises(ConcurrentAppendError):
                    commit(planned, rewritten)
            else:
                assert commit(planned, rewritten).version == 5


def test_upsert_on_every_backend(spark, tmp_path, backend):
    """The same MERGE on a local copy and on the store: the same rows, read back by deltalake."""
    from deltalake import DeltaTable as RsTable

    from tests.storage_servers import upload_tree

    from .dml_support import _sorted

    local = deltalake_table(tmp_path / "local", ["part"])
    uri = backend.uri("merged")
    if backend.name != "local":
        upload_tree(local, uri, backend.storage_options)
    else:
        uri = str(twin(local, tmp_path / "copy")[0])
    source = write_source(tmp_path, source_rows(SOURCE_IDS["some"]))
    clauses = CASES["conditional-all-three"]
    result = run_merge(spark, uri, source, ON, clauses, storage_options=backend.storage_options or None)
    expected = run_merge(spark, local, source, ON, clauses, io="hadoop")
    assert result.version == expected.version == 3
    assert {k: v for k, v in result.metrics.items() if k.startswith("numTargetRows")} == {
        k: v for k, v in expected.metrics.items() if k.startswith("numTargetRows")
    }
    theirs = RsTable(uri, storage_options=backend.storage_options or None).to_pyarrow_table()
    assert _sorted(theirs) == rows_deltalake(local)
