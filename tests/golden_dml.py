"""DELETE, UPDATE, APPEND and OPTIMIZE on every golden table we can read (issue 44, item 5).

The tables are delta-spark's golden tables (``tests/golden``), the ones
delta-spark 4.4 wrote for us (``tests/golden-4.4``) and delta-rs's vendored
ones (``tests/delta-rs``). For each table that our reader opens, on a copy:

* UPDATE a column (the first of an integer, string, boolean, date or decimal
  type that has a value) to another literal of its type where it equals its
  least common value, so that files are rewritten in part, not whole;
* DELETE the rows where that column equals its least common value then
  (UPDATE goes first, so that on a table of one row both change something);
* APPEND three rows read from the table itself;
* OPTIMIZE.

Each operation's rows (Spark's JSON of our scan) are checked against a model:
the rows before, changed in Python by the same condition (OPTIMIZE changes
none). Where delta-rs (``deltalake``) can run the same operation, it does so
on a twin copy, and the twin's rows must be ours too. An operation we refuse
must raise :class:`UnsupportedFeatureError` naming the table feature that stops
us, and leave the table as it was: no new commit, no new data file.

``python -m tests.golden_dml`` runs it all and prints, per operation, how many
tables it changed, and how many were refused and why; the test
(``tests/spark/test_golden_dml.py``) asserts it table by table.
Operations run through the CLI entry point (:mod:`tests.cli_operations`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPORA = {
    "golden": ROOT / "tests" / "golden",
    "golden-4.4": ROOT / "tests" / "golden-4.4",
    "delta-rs": ROOT / "tests" / "delta-rs",
}
#: Tables of more rows are not tried: their rows are compared in Python (three golden tables hold a million).
MAX_ROWS = 20_000
#: In this order: an UPDATE first, so that on a table of one row both it and the DELETE change it.
OPERATIONS = ("update", "delete", "append", "optimize")

#: Delta types a condition is built on: a literal of each is plain SQL in Spark and in DataFusion.
_INTEGRAL = ("byte", "short", "integer", "long")
_TYPES = (*_INTEGRAL, "string", "boolean", "date", "decimal")


#: The table features of PROTOCOL.md and delta-spark's ``TableFeature.scala`` (preview names too).
FEATURE_NAMES = [
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "identityColumns",
    "deletionVectors",
    "rowTracking",
    "domainMetadata",
    "clustering",
    "liquid",
    "timestampNtz",
    "v2Checkpoint",
    "checkpointProtection",
    "inCommitTimestamp",
    "vacuumProtocolCheck",
    "typeWidening",
    "typeWidening-preview",
    "variantType",
    "variantType-preview",
    "variantShredding-preview",
    "icebergCompatV1",
    "icebergCompatV2",
    "icebergWriterCompatV1",
    "collations",
    "collations-preview",
    "allowColumnDefaults",
    "catalogManaged",
    "catalogOwned-preview",
]


#: (corpus, table, operation) -> why it fails today: product gaps, reported, that the test tolerates.
KNOWN_ERRORS: dict[tuple[str, str, str], str] = {}


#: The tables ``make test`` runs (a checkpoint, column mapping, partitioned deletion vectors, and a
#: table we refuse), kept few for CI's time;
#: ``GOLDEN_DML_ALL=1`` (``make test-conformance``) runs every table, as ``python -m tests.golden_dml`` does.
CI_TABLES = frozenset(
    {
        ("golden", "basic-with-inserts-deletes-checkpoint"),
        ("golden", "collations-table"),
        ("golden", "data-skipping-basic-stats-all-types-columnmapping-id"),
        ("golden", "dv-partitioned-with-checkpoint"),
    }
)


def table_names() -> list[tuple[str, str]]:
    """(corpus, table) of every table folder of the corpora, sorted."""
    out = []
    for corpus, root in CORPORA.items():
        if not root.is_dir():
            continue
        for log in sorted(root.rglob("_delta_log")):
            if log.is_dir():
                out.append((corpus, str(log.parent.relative_to(root))))
    return out


@dataclass
class Outcome:
    """What one operation did to one table."""

    #: "changed" (committed, rows as expected), "unchanged" (nothing to do: no commit),
    #: "refused" (UnsupportedFeatureError naming a feature, table untouched), "error".
    status: str
    detail: str = ""
    #: "in step" when delta-rs ran it too on the twin, else why not.
    twin: str = ""


@dataclass
class TableReport:
    corpus: str
    name: str
    #: Why the table was not tried (our reader does not open it), or "".
    unreadable: str = ""
    column: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    #: After the four operations: "same rows as delta-rs" (it ran them all on a twin), else why not.
    twin: str = ""


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _feature_named(message: str) -> str | None:
    """The table features an UnsupportedFeatureError's message names as missing (its first clause,
    before the list of what we do support), comma-separated; None when it names none."""
    head = message.split(";")[0]
    found = [
        name
        for name in sorted(FEATURE_NAMES, key=len, reverse=True)
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", head)
    ]
    return ", ".join(sorted(found)) or None


def _pick_column(snap: Any, rows: list[dict[str, Any]]) -> tuple[str, str, Any] | None:
    """(column, Delta type, value): the first column of a plain type with a value, data columns
    first, and its least common value (ties: the first seen), so that a file is rewritten in part."""
    fields = [f for f in snap.schema.get("fields", ()) if isinstance(f["type"], str)]
    partitions = {c.lower() for c in snap.partition_columns}
    ordered = [f for f in fields if f["name"].lower() not in partitions] + [
        f for f in fields if f["name"].lower() in partitions
    ]
    for f in ordered:
        t = f["type"].lower().replace(" ", "")
        if t.split("(")[0] not in _TYPES or f.get("metadata", {}).get("delta.identity.start") is not None:
            continue
        values = [r[f["name"]] for r in rows if r.get(f["name"]) is not None]
        if not values:
            continue
        counts = Counter(values)
        return f["name"], t, min(counts, key=lambda v: (counts[v], values.index(v)))
    return None


def _literal(value: Any, delta_type: str) -> str:
    if delta_type == "date":
        return f"DATE '{value}'"
    if delta_type.startswith("decimal"):
        return f"CAST('{value}' AS {delta_type.upper()})"
    if delta_type == "string":
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if delta_type == "boolean":
        return "true" if value else "false"
    return str(int(value))


def _other(value: Any, delta_type: str) -> Any:
    """Another value of the type: the UPDATE's new value."""
    if delta_type == "string":
        return f"{value}!"
    if delta_type == "boolean":
        return not value
    if delta_type == "date":
        import datetime as dt

        return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
    if delta_type.startswith("decimal"):
        return -value if value else value + 1
    return value - 1 if value > 0 else value + 1


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


#: Spark's JSON of a map whose keys are arrays names each key by a JVM object (``ColumnarArray@1a2b``).
_JVM_OBJECT = re.compile(r"(org\.apache\.spark\.[\w.]+)@[0-9a-f]+")


def _json_rows(frame: Any) -> list[dict[str, Any]]:
    """The rows as Spark's own JSON (UTC), parsed: ints, strings and booleans compare as Python values."""
    return [
        json.loads(_JVM_OBJECT.sub(r"\1", r[0]), parse_float=Decimal)
        for r in frame.selectExpr("to_json(struct(*), map('timeZone', 'UTC')) AS j").collect()
    ]


def _without(rows: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in columns} for r in rows] if columns else rows


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=lambda d: str(d.normalize())) for r in rows)


def _our_rows(spark: Any, path: Path) -> list[dict[str, Any]]:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.spark.read.scan import scan

    return _json_rows(scan(spark, DeltaTable(str(path)).snapshot()))


def _twin(op: str, twin: Path, picked: tuple[str, str, Any] | None, source: Any) -> str:
    """Run ``op`` with delta-rs on the twin; "" when it did, else why not."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    try:
        rs = RsTable(str(twin))
        if op in ("delete", "update"):
            assert picked is not None
            column, delta_type, value = picked
            quoted = '"' + column.replace('"', '""') + '"'

            def lit(v: Any) -> str:
                return _literal(v, delta_type).replace("\\'", "''")

            if op == "delete":
                rs.delete(f"{quoted} = {lit(value)}")
            else:
                rs.update(updates={quoted: lit(_other(value, delta_type))}, predicate=f"{quoted} = {lit(value)}")
        elif op == "append":
            write_deltalake(str(twin), source, mode="append")
        else:
            rs.optimize.compact()
    except Exception as exc:  # delta-rs refuses or fails: the model alone checks ours
        return f"delta-rs: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    return ""


def _error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}"


def run_table(spark: Any, corpus: str, name: str, workdir: Path) -> TableReport:
    """The four operations on a copy of one table, each checked; the report."""
    import pyarrow.parquet as pq

    from airflow_delta_provider.delta.errors import UnsupportedFeatureError
    from airflow_delta_provider.delta.table import DeltaTable
    from tests.cli_operations import run, version_of

    report = TableReport(corpus, name)
    src = CORPORA[corpus] / name
    ours, twin = workdir / "ours", workdir / "twin"
    for d in (ours, twin):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d, symlinks=False)
    try:
        snap = DeltaTable(str(ours)).snapshot()
        if (snap.num_records or 0) > MAX_ROWS:
            for op in OPERATIONS:
                report.outcomes[op] = Outcome("skipped", f"{snap.num_records} rows: more than {MAX_ROWS} to compare")
            return report
        rows = _our_rows(spark, ours)
    except Exception as exc:
        report.unreadable = _error(exc)
        return report
    twin_state = "in step"  # or why delta-rs fell behind
    for op in OPERATIONS:
        log_before, files_before = DeltaTable(str(ours)).latest_version(), _files(ours)
        source_arrow = None
        picked = None
        identity: list[str] = []
        if op in ("delete", "update"):
            picked = _pick_column(snap, rows)  # on the rows as they are now
            if picked is None:
                report.outcomes[op] = Outcome("skipped", "no column of a plain type with a value")
                continue
            column, delta_type, value = picked
            report.column = column
            cond = f"{_quoted(column)} = {_literal(value, delta_type)}"
            if op == "delete":
                argv = ["delete", ours, "--condition", cond]
                expected = [r for r in rows if r.get(column) != value]
            else:
                new = _other(value, delta_type)
                argv = ["update", ours, "--condition", cond, "--set", f"{column}={_literal(new, delta_type)}"]
                expected = [{**r, column: new} if r.get(column) == value else r for r in rows]
        elif op == "append":
            source = workdir / "source"
            shutil.rmtree(source, ignore_errors=True)
            from airflow_delta_provider.spark.read.scan import scan

            # GENERATED ALWAYS identity columns are left out, as delta-spark asks; the table numbers the rows.
            identity = [
                f["name"]
                for f in snap.schema.get("fields", ())
                if "delta.identity.start" in (f.get("metadata") or {})
                and not (f.get("metadata") or {}).get("delta.identity.allowExplicitInsert")
            ]
            try:
                scan(spark, DeltaTable(str(ours)).snapshot()).drop(*identity).limit(3).write.parquet(str(source))
                source_arrow = pq.read_table(str(source))
                appended = _json_rows(spark.read.parquet(str(source)))
            except Exception as exc:
                report.outcomes[op] = Outcome("skipped", f"no parquet source of its rows: {_error(exc)}")
                continue
            argv = ["append", ours, "--source", source, "--format", "parquet"]
            expected = rows + appended
        else:
            argv = ["optimize", ours]
            expected = rows
        try:
            result = run(spark, *argv)
        except UnsupportedFeatureError as exc:
            feature = _feature_named(str(exc))
            unchanged = DeltaTable(str(ours)).latest_version() == log_before and _files(ours) == files_before
            if feature and unchanged:
                report.outcomes[op] = Outcome("refused", feature)
            else:
                why = "the table changed" if not unchanged else "names no feature"
                report.outcomes[op] = Outcome("error", f"refused, but {why}: {_error(exc)}")
            continue
        except Exception as exc:
            report.outcomes[op] = Outcome("error", _error(exc))
            continue
        got = _our_rows(spark, ours)
        unnumbered = identity if op == "append" else []
        if _sorted(_without(got, unnumbered)) != _sorted(_without(expected, unnumbered)):
            report.outcomes[op] = Outcome(
                "error", f"rows differ from the model ({len(got)} rows, {len(expected)} expected)"
            )
            continue
        rows = got
        report.outcomes[op] = Outcome("changed" if version_of(result) is not None else "unchanged")
        if twin_state == "in step":
            twin_state = _twin(op, twin, picked, source_arrow) or "in step"
            report.outcomes[op].twin = twin_state
    if twin_state == "in step" and any(o.status == "changed" for o in report.outcomes.values()):
        try:
            theirs = _our_rows(spark, twin)
        except Exception as exc:
            theirs = None
            twin_state = f"reading delta-rs's twin: {_error(exc)}"
        if theirs is not None and _sorted(theirs) != _sorted(rows):
            report.twin = "rows differ from delta-rs's on the twin"
        elif theirs is not None:
            report.twin = "same rows as delta-rs"
    if not report.twin:
        report.twin = twin_state
    return report


def summary(reports: list[TableReport]) -> str:
    """Per operation: tables changed, unchanged, refused (by feature), errors; and the unreadable tables."""
    lines = []
    readable = [r for r in reports if not r.unreadable]
    lines.append(
        f"{len(reports)} golden tables; {len(readable)} opened by our reader, {len(reports) - len(readable)} not"
    )
    for op in OPERATIONS:
        outcomes = [r.outcomes[op] for r in readable if op in r.outcomes]
        by = Counter(o.status for o in outcomes)
        lines.append(
            f"{op:9s} changed {by['changed']:3d}, nothing to change {by['unchanged']:3d}, refused {by['refused']:3d}, "
            f"skipped {by['skipped']:3d}, errors {by['error']:3d}"
        )
        refused = Counter(o.detail for o in outcomes if o.status == "refused")
        for feature, n in sorted(refused.items()):
            lines.append(f"          refused for {feature}: {n}")
        for r in readable:
            o = r.outcomes.get(op)
            if o is not None and o.status == "error":
                lines.append(f"          error on {r.corpus}/{r.name}: {o.detail}")
    twins = Counter(
        r.twin if r.twin.startswith(("same", "rows differ")) else "delta-rs could not follow" for r in readable
    )
    lines.append("twin: " + ", ".join(f"{k} {v}" for k, v in sorted(twins.items())))
    for r in readable:
        if r.twin.startswith("rows differ"):
            lines.append(f"          twin differs on {r.corpus}/{r.name}")
    reasons = Counter(r.unreadable.split(":")[0] for r in reports if r.unreadable)
    lines.append("not opened: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import tempfile

    from airflow_delta_provider.spark.runtime.session import get_or_create_session

    spark = get_or_create_session(
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    reports = []
    names = table_names()
    if argv[:1] == ["--start-at"]:  # resume a long run: this table and those after it
        names = names[[n for _c, n in names].index(argv[1]) :]
        argv = argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, name in names:
            if argv and name not in argv:
                continue
            report = run_table(spark, corpus, name, Path(tmp))
            reports.append(report)
            if "-v" in os.environ.get("GOLDEN_DML_VERBOSE", "-v"):
                outcomes = {k: (o.status, o.detail) for k, o in report.outcomes.items()}
                print(corpus, name, report.unreadable or outcomes, "|", report.twin, flush=True)
    print(summary(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
