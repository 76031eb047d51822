"""The interop matrix: each operation of ours on tables with each table feature, against delta-spark.

A cell is one operation on one feature. It is checked two ways, in one test:

a. **delta-spark first.** delta-spark creates the table with the feature and
   writes some history with its own DML (a *seed*, built once per feature and
   copied for each cell). We run the operation. delta-spark then reads the
   result and commits its own DML on top of ours.
b. **The same operation on a twin.** delta-spark runs the same operation with
   the same SQL on an identical copy of the seed. The rows, the commit's
   operation, parameters and metrics, and the protocol and properties
   afterwards are compared; and, where the feature calls for it, the change
   data feed and the row ids.

A deliberate difference is declared in :data:`DIFFERENCES` with its reason;
``docs/protocol-compliance.rst`` lists them, and its matrix names each cell's test.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.delta_spark.delta_log_commits import commit_versions, read_commit

#: The seed's columns before any feature adds its own.
BASE_COLUMNS = "id BIGINT, part STRING, v INT, s STRING, note STRING"


@dataclass(frozen=True)
class Feature:
    """A table feature as delta-spark turns it on, and the history the seed gets."""

    name: str
    columns: str = ""  # extra column DDL, e.g. "g INT GENERATED ALWAYS AS (v * 2)"
    properties: dict[str, str] = field(default_factory=dict)
    clause: str = ""  # e.g. "PARTITIONED BY (part)" or "CLUSTER BY (id)"
    history: tuple[str, ...] = ()  # extra SQL after the inserts; {t} is the table
    #: Extra insertable columns and the SQL expression of row i's value.
    values: dict[str, str] = field(default_factory=dict)

    @property
    def cdf(self) -> bool:
        return self.properties.get("delta.enableChangeDataFeed") == "true"

    @property
    def row_tracking(self) -> bool:
        return self.properties.get("delta.enableRowTracking") == "true"


#: Every table feature we support, plus the plain and partitioned tables.
FEATURES: tuple[Feature, ...] = (
    Feature("plain"),
    Feature("partitioned", clause="PARTITIONED BY (part)"),
    Feature("deletion_vectors", properties={"delta.enableDeletionVectors": "true"}),
    Feature(
        "column_mapping_name",
        properties={"delta.columnMapping.mode": "name"},
        history=("ALTER TABLE {t} RENAME COLUMN note TO remark",),
    ),
    Feature(
        "column_mapping_id",
        properties={"delta.columnMapping.mode": "id"},
        history=("ALTER TABLE {t} RENAME COLUMN note TO remark",),
    ),
    Feature("change_data_feed", properties={"delta.enableChangeDataFeed": "true"}),
    Feature("check_constraints", history=("ALTER TABLE {t} ADD CONSTRAINT v_nonneg CHECK (v >= 0)",)),
    Feature("generated_columns", columns="g INT GENERATED ALWAYS AS (v * 2)"),
    Feature("identity_columns", columns="ident BIGINT GENERATED ALWAYS AS IDENTITY"),
    Feature("row_tracking", properties={"delta.enableRowTracking": "true"}),
    Feature("in_commit_timestamps", properties={"delta.enableInCommitTimestamps": "true"}),
    Feature(
        "type_widening",
        properties={"delta.enableTypeWidening": "true"},
        history=("ALTER TABLE {t} CHANGE COLUMN v TYPE BIGINT",),
    ),
    Feature(
        "timestamp_ntz",
        columns="ts TIMESTAMP_NTZ",
        values={"ts": "TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id AS INT))"},
    ),
    Feature("variant", columns="var VARIANT", values={"var": "parse_json(format_string('{\"k\": %d}', id))"}),
    Feature(
        "v2_checkpoints",
        properties={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"},
    ),
    Feature("clustering", clause="CLUSTER BY (id)"),
)
FEATURE_NAMES = tuple(f.name for f in FEATURES)


def feature(name: str) -> Feature:
    return next(f for f in FEATURES if f.name == name)


def table(path: str | Path) -> str:
    return f"delta.`{path}`"


def source_sql(feature: Feature, ids: range | list[int], v: str = "CAST(id % 7 AS INT)") -> str:
    """A SELECT of rows for ``ids`` in the feature's insertable columns."""
    ids = list(ids)
    values = ", ".join(f"({i})" for i in ids)
    columns = {
        "id": "id",
        "part": "IF(id % 3 = 0, 'b', 'a')",
        "v": v,
        "s": "concat('s', CAST(id AS STRING))",
        "note": "IF(id % 5 = 0, NULL, 'n')",
        **feature.values,
    }
    select = ", ".join(f"{expr} AS {name}" for name, expr in columns.items())
    return f"SELECT {select} FROM VALUES {values} AS src(id)"


def insertable(feature: Feature, renamed: bool = True) -> list[str]:
    """The columns a source fills, by the names the seed has after its history."""
    names = ["id", "part", "v", "s", "note", *feature.values]
    if renamed and any("RENAME COLUMN note TO remark" in h for h in feature.history):
        names[names.index("note")] = "remark"
    return names


def build_seed(oracle: Any, feature: Feature, path: Path) -> None:
    """delta-spark creates the table and writes its history: two inserts, an UPDATE, a DELETE."""
    t = table(path)
    columns = ", ".join(c for c in (BASE_COLUMNS, feature.columns) if c)
    props = ", ".join(f"'{k}' = '{v}'" for k, v in feature.properties.items())
    oracle.sql(
        f"CREATE TABLE {t} ({columns}) USING delta {feature.clause}" + (f" TBLPROPERTIES ({props})" if props else "")
    )
    cols = ", ".join(insertable(feature, renamed=False))
    oracle.sql(f"INSERT INTO {t} ({cols}) {source_sql(feature, range(0, 20))}")
    for statement in feature.history:
        oracle.sql(statement.format(t=t))
    cols = ", ".join(insertable(feature))
    oracle.sql(f"INSERT INTO {t} ({cols}) {source_sql(feature, range(20, 40))}")
    oracle.sql(f"UPDATE {t} SET s = concat(s, '-u') WHERE id % 10 = 1")
    oracle.sql(f"DELETE FROM {t} WHERE id % 10 = 9")


class Seeds:
    """One seed table per feature, built by delta-spark on first use."""

    def __init__(self, oracle: Any, root: Path) -> None:
        self.oracle = oracle
        self.root = root
        self._built: dict[str, tuple[Path, int]] = {}

    def copy(self, name: str, target: Path) -> str:
        self._seed(name)
        shutil.copytree(self._built[name][0], target)
        return str(target)

    def version(self, name: str) -> int:
        """The seed's last version."""
        return self._seed(name)[1]

    def _seed(self, name: str) -> tuple[Path, int]:
        if name not in self._built:
            path = self.root / name
            if not (path / "_delta_log").is_dir():  # a kept seed is reused
                build_seed(self.oracle, feature(name), path)
            self._built[name] = (path, self.oracle.history(str(path))[-1]["version"])
        return self._built[name]


# What is compared ----------------------------------------------------------

#: Metrics whose values depend on the writer's file layout or the clock, not on
#: the operation's meaning: only their names are compared.
LAYOUT_METRICS = re.compile(r"Bytes|TimeMs|Files|FileSize|numBatches|numOutputRows$|Partitions|DeletionVectors")
#: delta-spark's expression ids in a predicate, "(id#205L = 1)".
_EXPR_ID = re.compile(r"#\d+L?")
#: A qualifier before a column, "t.id"; delta-spark renders resolved columns without one.
_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*\.(?=[A-Za-z_`])")


def rendered(value: str) -> str:
    """A parameter's value as the text it means: delta-spark renders a condition from its resolved
    expression ("((id#5L % 10) = 5)"), we record the SQL as given ("s.id % 10 = 5"); both lose the
    expression ids, qualifiers, parentheses, white space and case."""
    return re.sub(r"[()\s]", "", _QUALIFIER.sub("", _EXPR_ID.sub("", value))).lower()


@dataclass
class Outcome:
    """What one side's table looks like after the operation, as delta-spark reads it."""

    columns: list[str]  # of each row
    rows: list[tuple]
    operation: str
    parameters: dict[str, str]
    metrics: dict[str, str]
    protocol: tuple[int, int, tuple[str, ...]]
    properties: dict[str, str]
    changes: list[tuple] | None = None
    row_ids: list[tuple] | None = None
    #: The columns (name, type) in order, then the partition and clustering columns.
    schema: tuple | None = None
    #: Where there is an identity column: whether its values are unique, and the (id, value) pairs the
    #: table had before the operation that are still there.
    identity: tuple | None = None


def outcome(oracle: Any, path: str, feature: Feature, since: int) -> Outcome:
    """Read ``path`` through delta-spark: its rows, its last commit, its protocol, properties and, where the
    feature has them, the changes since version ``since`` and the row ids."""
    t = table(path)
    detail = oracle.detail(path)
    last = oracle.history(path, limit=1)[-1]
    described = oracle.sql(f"DESCRIBE {t}")
    columns = [r.col_name for r in described if r.col_name and not r.col_name.startswith("#")]
    head = [(r.col_name, r.data_type) for r in described]
    head = head[: next((i for i, (n, _) in enumerate(head) if not n or n.startswith("#")), len(head))]
    # Identity values are the writer's to choose (unique, past the high-water mark, not consecutive):
    # they are compared by what they must be, in ``identity``, and left out of ``rows``.
    names = [c for c in dict.fromkeys(columns) if c not in ("var", "ident")] + ["var"] * ("var" in columns)
    data = ", ".join("to_json(var) AS var" if c == "var" else c for c in names)
    read = oracle.sql(f"SELECT {data}" + (", ident" if "ident" in columns else "") + f" FROM {t}")
    rows = sorted(tuple(r)[: len(names)] for r in read)
    identity = None
    if "ident" in columns:
        (old_max,) = oracle.sql(f"SELECT max(ident) FROM {t} VERSION AS OF {since}")[0]
        pairs = [(r.id, r.ident) for r in read]
        values = [v for _, v in pairs]
        identity = (len(set(values)) == len(values), sorted(p for p in pairs if p[1] <= old_max))
    changes = None
    if feature.cdf and last["version"] > since:
        changes = sorted(
            tuple(r)
            for r in oracle.sql(
                f"SELECT {data}, _change_type, _commit_version FROM table_changes_by_path('{path}', {since + 1})"
            )
        )
    row_ids = None
    if feature.row_tracking:
        row_ids = sorted(tuple(r) for r in oracle.sql(f"SELECT id, _metadata.row_id FROM {t}"))
    return Outcome(
        columns=names,
        rows=rows,
        operation=last["operation"],
        parameters={k: _EXPR_ID.sub("", str(v)) for k, v in (last["operationParameters"] or {}).items()},
        metrics=dict(last["operationMetrics"] or {}),
        protocol=(detail["minReaderVersion"], detail["minWriterVersion"], tuple(sorted(detail["tableFeatures"]))),
        properties=dict(detail["properties"]),
        changes=changes,
        row_ids=row_ids,
        identity=identity,
        schema=(tuple(head), tuple(detail["partitionColumns"] or ()), tuple(detail.get("clusteringColumns") or ())),
    )


def differences(ours: Outcome, theirs: Outcome) -> dict[str, tuple[Any, Any]]:
    """Each aspect where the two differ: aspect -> (ours, theirs)."""
    found: dict[str, tuple[Any, Any]] = {}
    for aspect in ("rows", "operation", "protocol", "properties", "changes", "row_ids", "schema", "identity"):
        a, b = getattr(ours, aspect), getattr(theirs, aspect)
        if a != b:
            found[aspect] = (a, b)
    if set(ours.parameters) != set(theirs.parameters):
        found["parameter names"] = (sorted(ours.parameters), sorted(theirs.parameters))
    parameters = {
        k: (ours.parameters[k], theirs.parameters[k])
        for k in set(ours.parameters) & set(theirs.parameters)
        if rendered(ours.parameters[k]) != rendered(theirs.parameters[k])
    }
    if parameters:
        found["parameter values"] = (parameters, None)
    if set(ours.metrics) != set(theirs.metrics):
        found["metric names"] = (
            sorted(set(ours.metrics) - set(theirs.metrics)),
            sorted(set(theirs.metrics) - set(ours.metrics)),
        )
    values = {
        k: (ours.metrics[k], theirs.metrics[k])
        for k in set(ours.metrics) & set(theirs.metrics)
        if not LAYOUT_METRICS.search(k) and ours.metrics[k] != theirs.metrics[k]
    }
    if values:
        found["metric values"] = (values, None)
    return found


#: Deliberate differences: (operation or "*", feature or "*", aspect) -> why.
DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("merge", "deletion_vectors", "metric values"): (
        "our MERGE is copy-on-write: it rewrites the kept rows of a touched file (numTargetRowsCopied) where "
        "delta-spark marks the changed rows in a deletion vector and copies none"
    ),
    **{
        ("append_overwrite_schema", mapped, "properties"): (
            "overwriteSchema on a mapped table: our column ids keep counting past the old schema's "
            "(delta.columnMapping.maxColumnId), so an id never names two columns in the table's history; "
            "delta-spark restarts them at 1"
        )
        for mapped in ("column_mapping_name", "column_mapping_id")
    },
    **{
        (overwrite, "clustering", "schema"): (
            "an overwrite keeps the table's clustering, as it keeps its partitioning. delta-spark 4.4 treats a "
            "whole-table overwrite as a table replace and commits an empty delta.clustering domain "
            "(ClusteredTableUtils.getDomainMetadataFromTransaction), so the table silently stops being "
            "clustered; its partitioning it keeps. Our APPEND's cluster_by may only restate the table's "
            "clustering columns (ALTER changes them)"
        )
        for overwrite in ("append_overwrite", "append_overwrite_schema")
    },
}
#: ... of the maintenance and schema operations (test_matrix_maintenance, test_matrix_alter).
DIFFERENCES.update({
    ("checkpoint", "*", "checkpoint add stats_parsed"): "an unset delta.checkpoint.writeStatsAsStruct "
    "is false for us (PROTOCOL.md's default) and true for delta-spark: our checkpoints then keep file stats as JSON "
    "only (with the property set they hold stats_parsed too); stats_parsed is optional and delta-spark reads them",
    ("checkpoint", "*", "checkpoint add partitionValues_parsed"): "likewise, partition values as strings only: "
    "partitionValues_parsed is optional and delta-spark reads our checkpoints without it",
    ("checkpoint", "*", "log after cleanup"): "we keep the cut-off checkpoint and its commit, as PROTOCOL.md's "
    "Metadata Cleanup prescribes; delta-spark 4.4 deletes every expired file below its newest checkpoint (and on "
    "V2 tables writes a classic-named copy of the oldest checkpoint left)",
})  # fmt: skip


def undeclared(operation: str, feature_name: str, found: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    """The differences in ``found`` that :data:`DIFFERENCES` does not declare."""
    return {
        aspect: pair
        for aspect, pair in found.items()
        if not any(
            (op in ("*", operation)) and (feat in ("*", feature_name)) and asp == aspect
            for (op, feat, asp) in DIFFERENCES
        )
    }


@dataclass(frozen=True)
class Operation:
    """One operation of the matrix: our CLI's arguments and delta-spark's SQL for the same change.

    ``ours(cell)`` returns the Spark CLI's argv; ``theirs(cell)`` the SQL
    statements (``{t}`` is the twin), or callables given the oracle (e.g. a
    DataFrame write over Connect). ``skip(feature)`` gives the reason a
    cell does not apply (both sides refuse it, or it means nothing), or None.
    ``prepare(oracle, cell)``, when given, runs first (e.g. delta-spark writes
    the source both sides read).
    """

    name: str
    ours: Callable[[Cell], list[str]]
    theirs: Callable[[Cell], list[str | Callable[[Any], Any]]]
    skip: Callable[[Feature], str | None] = lambda f: None
    on_top: bool = True  # whether delta-spark commits DML on top afterwards
    prepare: Callable[[Any, Cell], None] | None = None


def cells(*operations: Operation) -> list[Any]:
    """``pytest.param(operation, feature)`` for every cell of ``operations``, skipped where they do not apply."""
    import pytest

    params = []
    for operation in operations:
        for f in FEATURES:
            reason = operation.skip(f)
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            params.append(pytest.param(operation, f.name, id=f"{operation.name}-{f.name}", marks=marks))
    return params


@dataclass
class Cell:
    feature: Feature
    ours_path: str
    twin_path: str
    workdir: Path

    @property
    def columns(self) -> list[str]:
        return insertable(self.feature)


def run_cell(oracle: Any, spark: Any, seeds: Seeds, operation: Operation, feature_name: str, workdir: Path) -> None:
    """Run one cell, both ways; assert that only declared differences remain."""
    from airflow_delta_provider.spark.cli import execute, parse_request

    f = feature(feature_name)
    cell = Cell(f, seeds.copy(f.name, workdir / "ours"), seeds.copy(f.name, workdir / "twin"), workdir)
    since = seeds.version(f.name)
    if operation.prepare is not None:
        operation.prepare(oracle, cell)
    # a. we run the operation on delta-spark's table ...
    execute(parse_request(operation.ours(cell)), spark)
    # b. ... and delta-spark the same on the twin.
    for statement in operation.theirs(cell):
        if callable(statement):
            statement(oracle)
        else:
            oracle.sql(statement.format(t=table(cell.twin_path)))
    ours, theirs = outcome(oracle, cell.ours_path, f, since), outcome(oracle, cell.twin_path, f, since)
    remaining = undeclared(operation.name, f.name, differences(ours, theirs))
    assert not remaining, f"{operation.name} on {f.name}: ours vs delta-spark's: {remaining}"
    if operation.on_top:
        at = ours.columns.index("id")
        continue_on_top(oracle, cell.ours_path, [row[at] for row in ours.rows if row[at] % 10 < 3])


def continue_on_top(oracle: Any, path: str, ids: list[int] | None = None) -> None:
    """delta-spark commits an UPDATE on top of the table we left (it reads our files, stats and vectors),
    of the rows with ``id % 10 < 3``: ``ids``, or what it reads first."""
    t = table(path)
    if ids is None:
        ids = [r[0] for r in oracle.sql(f"SELECT id FROM {t} WHERE id % 10 < 3")]
    (updated,) = oracle.sql(f"UPDATE {t} SET s = 'on-top' WHERE id % 10 < 3")
    assert updated.num_affected_rows == len(ids)
    versions = commit_versions(Path(path))
    last = read_commit(Path(path), versions[-1])
    assert last.operation == "UPDATE" and last.read_version == versions[-2]
    assert sorted(r[0] for r in oracle.sql(f"SELECT id FROM {t} WHERE s = 'on-top'")) == sorted(ids)


def write_source(oracle: Any, feature: Feature, path: Path, ids: range | list[int], **columns: str | None) -> str:
    """delta-spark writes parquet of rows for ``ids`` in the seed's insertable columns, by the names the seed
    has now, with ``columns`` (name -> SQL over the source's columns, None to leave one out) changed or added."""
    names = dict(zip(insertable(feature, renamed=False), insertable(feature), strict=True))
    select = {new: old for old, new in names.items()}
    select.update(columns)
    # The seed's types (its VALUES ids are INT): a file source carries them as they are.
    widened = any("CHANGE COLUMN v TYPE BIGINT" in h for h in feature.history)
    for name in ("id", "v") if widened else ("id",):
        select[name] = f"CAST({select[name]} AS BIGINT)"
    projection = ", ".join(f"{expr} AS {name}" for name, expr in select.items() if expr is not None)
    oracle.session.sql(f"SELECT {projection} FROM ({source_sql(feature, ids)})").write.parquet(str(path))
    return str(path)
