"""Hostile names, every operation (issue 44): column and partition names with
spaces, dots, hyphens (delta-spark's physical names are ``col-<uuid>``), a
backtick, unicode, a reserved word and mixed case, under column mapping
``none``, ``name`` and ``id``, on tables with the properties other engines set
(``delta.autoOptimize.optimizeWrite``, ``delta.targetFileSize``, deletion
vectors, the change data feed).

Each name set holds one name of every class (``space`` only with mapping:
without it delta-spark refuses `` ,;{}()\\n\\t=`` in names, and so do we);
hypothesis draws which name is the partition column, the key and the value,
and the names themselves. Each operation is one small function over a name
set: it changes a copy of the name set's base table through the Spark CLI
and returns the rows it expects, which delta-rs and DuckDB must read back.

Cost: the base table of a name set is written once and copied. Every
operation runs on the three explicit name sets (one per mapping mode, each
with every name class), and the operations of one command on
:data:`GENERATED` generated ones more, all with a fixed seed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_delta_provider.delta.expressions.quoting import quote_identifier as q
from tests.spark.cli_support import delta_rs_rows, duckdb_rows, run_cli

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("pyspark")
pytest.importorskip("deltalake")
pytest.importorskip("duckdb_extension_delta")

from hypothesis import HealthCheck, Phase, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MODES = ("none", "name", "id")
#: Characters delta-spark refuses in names without column mapping.
REFUSED_WITHOUT_MAPPING = " ,;{}()\n\t="
#: Generated name sets per operation that runs one command, besides the three
#: explicit ones (``HOSTILE_NAMES_EXAMPLES`` raises it for a longer run);
#: operations of several commands run the explicit ones only.
GENERATED = int(os.environ.get("HOSTILE_NAMES_EXAMPLES", "1"))


@dataclass(frozen=True)
class Names:
    """One name set: the partition column (first: DuckDB's delta extension
    wants a mapped table's partition column first), the key, the value and
    the other columns, under a column mapping mode."""

    mode: str
    partition: str
    key: str
    value: str
    extras: tuple[str, ...]

    @property
    def columns(self) -> list[str]:
        return [self.partition, self.key, self.value, *self.extras]

    def __repr__(self) -> str:
        return f"Names({self.mode}: {self.columns!r})"


# --- the name classes -----------------------------------------------------------------------------------

_words = st.sampled_from(["my", "Col", "total", "x1", "Ära"])
CLASSES: dict[str, st.SearchStrategy[str]] = {
    "space": st.builds(lambda a, b: f"{a} {b}", _words, _words),
    "dot": st.builds(lambda a, b: f"{a}.{b}", _words, _words),
    "hyphen": st.builds(lambda h: f"col-{h}", st.text("0123456789abcdef", min_size=4, max_size=8)),
    "backtick": st.builds(lambda a: f"we`{a}", _words),
    "unicode": st.builds(lambda a: f"{a}_ü", st.text("éüßçøÅ列名ñ", min_size=1, max_size=4)),
    "reserved": st.sampled_from(["select", "order", "from", "table", "group", "where"]),
    "case": st.sampled_from(["MiXeD", "UPPER", "lowerCASE"]),
}


@st.composite
def name_sets(draw: Callable[..., Any]) -> Names:
    mode = draw(st.sampled_from(MODES))
    classes = [c for c in CLASSES if mode != "none" or c != "space"]
    names: list[str] = []
    for cls in draw(st.permutations(classes)):
        name = draw(CLASSES[cls])
        while name.lower() in {n.lower() for n in names}:  # delta-spark refuses case-insensitive twins
            name += "_2"
        names.append(name)
    return Names(mode, names[0], names[1], names[2], tuple(names[3:]))


#: One name set per mode, always run: every class in every role over the operations.
EXPLICIT = (
    Names("none", "col-1a2b", "select", "a.b", ("we`ird", "Ünï_ü", "MiXeD")),
    Names("name", "Company Very Short", "col-3877fd94-0973", "order", ("a.b", "we`ird", "列名_ü", "MiXeD")),
    Names("id", "we`ird.x", "Super Name", "col-9f", ("from", "a.b", "Ünï_ü", "UPPER")),
)


def hostile(generated: int = GENERATED) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run ``test(spark, duckdb_delta, names)`` on the explicit name sets and
    ``generated`` more (none: the explicit ones only), with a fixed seed."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        for names in EXPLICIT:
            test = example(names=names)(test)
        phases = [Phase.explicit, Phase.generate] if generated else [Phase.explicit]
        return settings(
            derandomize=True,
            max_examples=max(generated, 1),
            phases=phases,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )(given(names=name_sets())(test))

    return decorate


# --- tables -----------------------------------------------------------------------------------------------

ROWS = [("a", k, k * 10, [f"s{k}{i}" for i in range(4)]) for k in (1, 2, 3)] + [
    ("b", k, k * 10, [f"s{k}{i}" for i in range(4)]) for k in (4, 5, 6)
]

_WORK = Path(tempfile.mkdtemp(prefix="hostile-names-"))
_BASES: dict[Names, str] = {}


def rows_of(names: Names, rows: list[tuple[Any, ...]] | None = None) -> list[dict[str, Any]]:
    out = []
    for p, k, v, extra in ROWS if rows is None else rows:
        out.append({names.partition: p, names.key: k, names.value: v, **dict(zip(names.extras, extra))})
    return out


def arrow(names: Names, rows: list[dict[str, Any]]) -> pa.Table:
    schema = pa.schema(
        [(names.partition, pa.string()), (names.key, pa.int64()), (names.value, pa.int64())]
        + [(e, pa.string()) for e in names.extras]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def source(names: Names, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> str:
    path = tempfile.mktemp(dir=_WORK, suffix=".parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema) if schema is not None else arrow(names, rows), path)
    return path


def properties(names: Names, change_data_feed: bool = True) -> list[str]:
    props = [
        "delta.autoOptimize.optimizeWrite=true",
        "delta.targetFileSize=1048576",
        "delta.enableDeletionVectors=true",
    ]
    if change_data_feed:
        props.append("delta.enableChangeDataFeed=true")
    if names.mode != "none":
        props.append(f"delta.columnMapping.mode={names.mode}")
    return [arg for p in props for arg in ("--property", p)]


def fresh(spark: Any, names: Names) -> str:
    """A copy of the name set's base table (version 0: :data:`ROWS`, partitioned)."""
    if names not in _BASES:
        base = tempfile.mkdtemp(dir=_WORK, prefix="base-")
        src = source(names, rows_of(names))
        run_cli(spark, "append", base, "--source", src, "--format", "parquet", "--partition-by", names.partition,
                *properties(names))  # fmt: skip
        _BASES[names] = base
    copy = tempfile.mkdtemp(dir=_WORK, prefix="t-")
    shutil.copytree(_BASES[names], copy, dirs_exist_ok=True)
    return copy


def as_tuples(names: Names, rows: list[dict[str, Any]], columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    cols = columns or names.columns
    return sorted((tuple(r.get(c) for c in cols) for r in rows), key=repr)


def check(duckdb: Any, path: str, names: Names, expected: list[dict[str, Any]], columns: list[str] | None = None):
    """delta-rs and DuckDB read back exactly ``expected``."""
    cols = columns or names.columns
    want = as_tuples(names, expected, cols)
    assert delta_rs_rows(path, cols) == want, "delta-rs"
    assert duckdb_rows(duckdb, path, cols) == want, "DuckDB"


# --- the operations: one small function each ---------------------------------------------------------------


@hostile()
def test_update(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "update", path, "--condition", f"{q(names.key)} >= 3",
            "--set", f"{q(names.value)}={q(names.value)} + 100", "--set", f"{names.extras[0]}=upper({q(names.extras[0])})")  # fmt: skip
    expected = rows_of(names)
    for r in expected:
        if r[names.key] >= 3:
            r[names.value] += 100
            r[names.extras[0]] = r[names.extras[0]].upper()
    check(duckdb_delta, path, names, expected)


@hostile()
def test_delete(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "delete", path, "--condition", f"{q(names.partition)} = 'a' AND {q(names.key)} <> 2")
    expected = [r for r in rows_of(names) if not (r[names.partition] == "a" and r[names.key] != 2)]
    check(duckdb_delta, path, names, expected)


@hostile()
def test_append_with_merge_schema(spark, duckdb_delta, names):
    """A new column with a hostile name; the value column spelled in the other
    case is the table's column (delta-spark matches names case-insensitively)."""
    path = fresh(spark, names)
    new = f"{names.extras[-1]}.new-ü"
    other_case = names.value.swapcase() if names.value.swapcase() != names.value else names.value
    schema = pa.schema(
        [(names.partition, pa.string()), (names.key, pa.int64()), (other_case, pa.int64()), (new, pa.string())]
    )
    added = [{names.partition: "c", names.key: 7, other_case: 70, new: "n7"}]
    run_cli(spark, "append", path, "--source", source(names, added, schema), "--format", "parquet", "--merge-schema")
    expected = [*rows_of(names), {names.partition: "c", names.key: 7, names.value: 70, new: "n7"}]
    check(duckdb_delta, path, names, expected, [*names.columns, new])


@hostile()
def test_append_replace_where(spark, duckdb_delta, names):
    path = fresh(spark, names)
    rows = rows_of(names, [("a", 9, 90, ["r0", "r1", "r2", "r3"])])
    run_cli(spark, "append", path, "--source", source(names, rows), "--format", "parquet", "--mode", "overwrite",
            "--replace-where", f"{q(names.partition)} = 'a'")  # fmt: skip
    check(duckdb_delta, path, names, [r for r in rows_of(names) if r[names.partition] != "a"] + rows)


@hostile()
def test_append_dynamic_partition_overwrite(spark, duckdb_delta, names):
    path = fresh(spark, names)
    rows = rows_of(names, [("b", 8, 80, ["d0", "d1", "d2", "d3"]), ("c", 9, 90, ["e0", "e1", "e2", "e3"])])
    run_cli(spark, "append", path, "--source", source(names, rows), "--format", "parquet", "--mode", "overwrite",
            "--partition-overwrite", "dynamic")  # fmt: skip
    check(duckdb_delta, path, names, [r for r in rows_of(names) if r[names.partition] == "a"] + rows)


@hostile()
def test_merge(spark, duckdb_delta, names):
    path = fresh(spark, names)
    rows = rows_of(names, [("a", 2, 222, ["m0", "m1", "m2", "m3"]), ("b", 7, 77, ["n0", "n1", "n2", "n3"])])
    clauses = [{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}]
    run_cli(spark, "merge", path, "--source", source(names, rows), "--source-format", "parquet",
            "--on", f"t.{q(names.key)} = s.{q(names.key)}", "--clauses", json.dumps(clauses))  # fmt: skip
    expected = [r for r in rows_of(names) if r[names.key] != 2] + rows
    check(duckdb_delta, path, names, expected)


@hostile(generated=0)
def test_optimize_zorder(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "delete", path, "--condition", f"{q(names.key)} = 1")  # two versions' files to compact
    run_cli(spark, "optimize", path, "--zorder-by", f"{names.key},{names.value}")
    check(duckdb_delta, path, names, [r for r in rows_of(names) if r[names.key] != 1])


@hostile(generated=0)
def test_optimize_clustering(spark, duckdb_delta, names):
    path = tempfile.mkdtemp(dir=_WORK, prefix="clustered-")
    src = source(names, rows_of(names))
    props = properties(names, change_data_feed=False)
    for _ in range(2):  # two files to cluster
        run_cli(spark, "append", path, "--source", src, "--format", "parquet",
                "--cluster-by", f"{names.key},{names.value}", *props)  # fmt: skip
    run_cli(spark, "optimize", path)
    check(duckdb_delta, path, names, rows_of(names) * 2)


@hostile(generated=0)
def test_reorg(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "delete", path, "--condition", f"{q(names.key)} IN (2, 5)")
    result = run_cli(spark, "reorg", path, "--purge")
    assert result["operation"] == "REORG"
    check(duckdb_delta, path, names, [r for r in rows_of(names) if r[names.key] not in (2, 5)])


@hostile(generated=0)
def test_restore(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "update", path, "--condition", f"{q(names.partition)} = 'b'", "--set", f"{q(names.value)}=0")
    run_cli(spark, "delete", path, "--condition", f"{q(names.key)} = 1")
    run_cli(spark, "restore", path, "--version", "0")
    check(duckdb_delta, path, names, rows_of(names))


@hostile(generated=0)
def test_changes(spark, duckdb_delta, names):
    path = fresh(spark, names)
    run_cli(spark, "update", path, "--condition", f"{q(names.key)} = 4", "--set", f"{q(names.value)}=-4")
    out = tempfile.mkdtemp(dir=_WORK, prefix="cdf-")
    run_cli(spark, "changes", path, "--start", "1", "--output", out, "--output-format", "parquet")
    got = pq.read_table(out)
    assert set(names.columns) <= set(got.column_names)
    changed = sorted((r["_change_type"], r[names.key], r[names.value]) for r in got.to_pylist())
    assert changed == [("update_postimage", 4, -4), ("update_preimage", 4, 40)]


@hostile(generated=0)
def test_clone(spark, duckdb_delta, names):
    path = fresh(spark, names)
    clone = os.path.join(tempfile.mkdtemp(dir=_WORK, prefix="clone-"), "t")
    run_cli(spark, "clone", clone, "--source", path)
    # delta-rs only: a shallow clone's files are absolute paths (``file:/...``, as delta-spark writes
    # them), which DuckDB's delta extension (1.4) opens as relative ones.
    assert delta_rs_rows(clone, names.columns) == as_tuples(names, rows_of(names))
    run_cli(spark, "delete", clone, "--condition", f"{q(names.partition)} = 'b'")  # the clone is a table of its own
    assert delta_rs_rows(clone, names.columns) == as_tuples(
        names, [r for r in rows_of(names) if r[names.partition] == "a"]
    )
    check(duckdb_delta, path, names, rows_of(names))  # the source is unchanged


@hostile()
def test_convert(spark, duckdb_delta, names):
    """A Hive-partitioned Parquet folder with a hostile partition column (its
    folder name escaped as Spark escapes it) becomes a table."""
    from airflow_delta_provider.delta.partitions import escape_partition_value

    folder = tempfile.mkdtemp(dir=_WORK, prefix="convert-")
    data = [c for c in names.columns if c != names.partition]
    schema = arrow(names, []).schema.remove(0)  # the files do not hold the partition column
    for value in ("a", "b"):
        rows = [{c: r[c] for c in data} for r in rows_of(names) if r[names.partition] == value]
        part = os.path.join(folder, f"{escape_partition_value(names.partition)}={value}")
        os.makedirs(part)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), os.path.join(part, "part-0.parquet"))
    argv = ["convert", folder, "--partition-by", f"{q(names.partition)} string"]
    if any(c in REFUSED_WITHOUT_MAPPING for name in names.columns for c in name):
        # CONVERT makes a table without column mapping (the files have no field ids): names it cannot hold are refused.
        from airflow_delta_provider.delta.errors import InvalidInputError

        with pytest.raises(InvalidInputError, match="may not contain"):
            run_cli(spark, *argv)
        assert not os.path.exists(os.path.join(folder, "_delta_log"))
        return
    run_cli(spark, *argv)
    check(duckdb_delta, folder, names, rows_of(names), [names.partition, *data])


@hostile()
def test_partition_watch(spark, duckdb_delta, names):
    """The partition sensor's core watch: a partition named by a hostile
    column, as a mapping and as a predicate."""
    from airflow_delta_provider.delta.log.version_probe import VersionProbe
    from airflow_delta_provider.delta.watch.partition_watch import PartitionWatch

    path = fresh(spark, names)
    by_value = PartitionWatch(VersionProbe(path), {names.partition: "a"}, min_records=3).poll()
    assert by_value is not None and by_value.num_records == 3
    by_predicate = PartitionWatch(VersionProbe(path), f"{q(names.partition)} = 'b'").poll()
    assert by_predicate is not None and by_predicate.num_records == 3
    assert PartitionWatch(VersionProbe(path), {names.partition: "c"}).poll() is None


# --- refusals ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", list(REFUSED_WITHOUT_MAPPING), ids=repr)
def test_names_without_mapping_refuse_what_delta_spark_refuses(spark, tmp_path, char):
    from airflow_delta_provider.delta.errors import InvalidInputError

    path = str(tmp_path / "t")
    src = str(tmp_path / "src.parquet")
    pq.write_table(pa.table({"id": [1], f"a{char}b": ["x"]}), src)
    with pytest.raises(InvalidInputError, match="column names may not contain"):
        run_cli(spark, "append", path, "--source", src, "--format", "parquet")
    assert not os.path.exists(os.path.join(path, "_delta_log"))
    mapped = run_cli(spark, "append", path, "--source", src, "--format", "parquet",
                     "--property", "delta.columnMapping.mode=name")  # fmt: skip
    assert mapped["version"] == 0
    assert delta_rs_rows(path, ["id", f"a{char}b"]) == [(1, "x")]


def test_case_insensitive_twins_are_refused(spark, tmp_path):
    from airflow_delta_provider.delta.errors import InvalidInputError

    src = str(tmp_path / "src.parquet")
    pq.write_table(pa.table({"Name": [1], "nAME": [2]}), src)
    with pytest.raises(InvalidInputError, match=r"(?i)duplicate|already exists"):
        run_cli(spark, "append", str(tmp_path / "t"), "--source", src, "--format", "parquet",
                "--property", "delta.columnMapping.mode=name")  # fmt: skip
