"""DELETE, UPDATE, APPEND and OPTIMIZE on every golden table we can read (issue 44, item 5).

The tables are delta-spark's golden tables (``tests/golden``), the ones
delta-spark 4.4 wrote for us (``tests/golden-4.4``) and delta-rs's vendored
ones (``tests/delta-rs``). For each table that our reader opens, on a copy:

* DELETE the rows where a column equals one of its values (the least common
  one, so that files are rewritten in part, not dropped whole);
* UPDATE that column to another literal of its type where it equals the value;
* APPEND a few rows read from the table itself;
* OPTIMIZE.

Each operation's rows are checked against a model: the rows before, changed in
Spark by the same condition (``filter``, ``when``, ``union``; OPTIMIZE changes
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

import os
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPORA = {
    "golden": ROOT / "tests" / "golden",
    "golden-4.4": ROOT / "tests" / "golden-4.4",
    "delta-rs": ROOT / "tests" / "delta-rs",
}
OPERATIONS = ("delete", "update", "append", "optimize")

#: Delta types a condition is built on: a literal of each is plain SQL in Spark and in DataFusion.
_INTEGRAL = ("byte", "short", "integer", "long")
_TYPES = (*_INTEGRAL, "string", "boolean")


#: The table features of PROTOCOL.md and delta-spark's ``TableFeature.scala`` (preview names too).
FEATURE_NAMES = (
    "appendOnly invariants checkConstraints changeDataFeed generatedColumns columnMapping identityColumns "
    "deletionVectors rowTracking domainMetadata clustering liquid timestampNtz v2Checkpoint checkpointProtection "
    "inCommitTimestamp vacuumProtocolCheck typeWidening typeWidening-preview variantType variantType-preview "
    "variantShredding-preview icebergCompatV1 icebergCompatV2 icebergWriterCompatV1 collations collations-preview "
    "allowColumnDefaults catalogManaged catalogOwned-preview"
).split()


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
    #: Whether delta-rs ran it too on a twin (and agreed), or why not.
    twin: str = ""


@dataclass
class TableReport:
    corpus: str
    name: str
    #: Why the table was not tried (our reader does not open it), or "".
    unreadable: str = ""
    column: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _feature_named(message: str) -> str | None:
    """The table feature an UnsupportedFeatureError's message names."""
    names = sorted(FEATURE_NAMES, key=len, reverse=True)
    for name in names:
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", message):
            return name
    return None


def _pick_column(snap: Any, rows: list[dict[str, Any]]) -> tuple[str, str, Any] | None:
    """(column, Delta type, value): the first column of a plain type with a value, data columns first;
    the value is its least common one (ties: the first seen)."""
    fields = [f for f in snap.schema.get("fields", ()) if isinstance(f["type"], str)]
    partitions = {c.lower() for c in snap.partition_columns}
    ordered = [f for f in fields if f["name"].lower() not in partitions] + [
        f for f in fields if f["name"].lower() in partitions
    ]
    for f in ordered:
        t = f["type"].lower()
        if t not in _TYPES or f.get("metadata", {}).get("delta.identity.start") is not None:
            continue
        values = [r[f["name"]] for r in rows if r.get(f["name"]) is not None]
        if not values:
            continue
        counts = Counter(values)
        value = min(counts, key=lambda v: (counts[v], values.index(v)))
        return f["name"], t, value
    return None


def _literal(value: Any, delta_type: str) -> str:
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
    return value - 1 if value > 0 else value + 1


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _json_rows(frame: Any) -> list[str]:
    return sorted(r[0] for r in frame.selectExpr("to_json(struct(*), map('timeZone', 'UTC')) AS j").collect())


def _our_rows(spark: Any, path: Path) -> tuple[Any, list[str]]:
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.spark.read.scan import scan

    frame = scan(spark, DeltaTable(str(path)).snapshot())
    return frame, _json_rows(frame)


def _twin(op: str, twin: Path, column: str, delta_type: str, value: Any, source: Any) -> str:
    """Run ``op`` with delta-rs on the twin; "" when it did, else why not."""
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    quoted = '"' + column.replace('"', '""') + '"'
    literal = _literal(value, delta_type).replace("\\'", "''")
    try:
        rs = RsTable(str(twin))
        if op == "delete":
            rs.delete(f"{quoted} = {literal}")
        elif op == "update":
            rs.update(
                updates={quoted: _literal(_other(value, delta_type), delta_type).replace("\\'", "''")},
                predicate=f"{quoted} = {literal}",
            )
        elif op == "append":
            write_deltalake(str(twin), source, mode="append")
        else:
            rs.optimize.compact()
    except Exception as exc:  # delta-rs refuses or fails: the model alone checks ours
        return f"delta-rs: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    return ""


def run_table(spark: Any, corpus: str, name: str, workdir: Path) -> TableReport:
    """The four operations on a copy of one table, each checked; the report."""
    from pyspark.sql import functions as F

    from airflow_delta_provider.delta.errors import DeltaError, UnsupportedFeatureError
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
        before_frame, before = _our_rows(spark, ours)
        py_rows = [r.asDict() for r in before_frame.collect()]
    except Exception as exc:
        report.unreadable = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        return report
    picked = _pick_column(snap, py_rows)
    twin_ok = True
    for op in OPERATIONS:
        log_before, files_before = DeltaTable(str(ours)).latest_version(), _files(ours)
        frame, _ = _our_rows(spark, ours)
        source_arrow = None
        if op in ("delete", "update"):
            if picked is None:
                report.outcomes[op] = Outcome("skipped", "no column of a plain type with a value")
                continue
            column, delta_type, value = picked
            report.column = column
            cond = f"{_quoted(column)} = {_literal(value, delta_type)}"
            if op == "delete":
                argv = ["delete", ours, "--condition", cond]
                expected = _json_rows(frame.filter(f"NOT ({cond}) OR ({cond}) IS NULL"))
            else:
                new = _literal(_other(value, delta_type), delta_type)
                argv = ["update", ours, "--condition", cond, "--set", f"{_quoted(column)}={new}"]
                expected = _json_rows(
                    frame.withColumn(column, F.when(F.expr(cond), F.expr(new)).otherwise(F.col(_quoted(column))))
                )
        elif op == "append":
            few = frame.limit(3)
            source = workdir / "source"
            shutil.rmtree(source, ignore_errors=True)
            few.write.parquet(str(source))
            import pyarrow.parquet as pq

            source_arrow = pq.read_table(str(source))
            argv = ["append", ours, "--source", source, "--format", "parquet"]
            expected = sorted(_json_rows(frame) + _json_rows(spark.read.parquet(str(source))))
        else:
            argv = ["optimize", ours]
            expected = _json_rows(frame)
        try:
            result = run(spark, *argv)
        except UnsupportedFeatureError as exc:
            feature = _feature_named(str(exc))
            unchanged = DeltaTable(str(ours)).latest_version() == log_before and _files(ours) == files_before
            detail = feature or f"(no feature named) {str(exc)[:160]}"
            report.outcomes[op] = Outcome("refused" if feature and unchanged else "error", detail)
            if not unchanged:
                report.outcomes[op].detail += " - and the table changed"
            continue
        except DeltaError as exc:
            report.outcomes[op] = Outcome("error", f"{type(exc).__name__}: {str(exc)[:200]}")
            continue
        except Exception as exc:
            report.outcomes[op] = Outcome("error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        _, got = _our_rows(spark, ours)
        if got != expected:
            report.outcomes[op] = Outcome("error", f"rows differ from the model: {len(got)} vs {len(expected)}")
            continue
        status = "changed" if version_of(result) is not None else "unchanged"
        outcome = Outcome(status)
        if twin_ok:
            why = _twin(op, twin, *(picked or ("", "", None)), source_arrow)
            if why:
                twin_ok = False  # the twin fell behind: compare no further
                outcome.twin = why
            else:
                try:
                    _, theirs = _our_rows(spark, twin)
                except Exception as exc:
                    theirs, outcome.twin = None, f"reading delta-rs's twin: {type(exc).__name__}"
                    twin_ok = False
                if theirs is not None:
                    if theirs != got:
                        outcome = Outcome("error", "rows differ from delta-rs's on the twin", "differs")
                    else:
                        outcome.twin = "same rows as delta-rs"
        else:
            outcome.twin = "twin behind"
        report.outcomes[op] = outcome
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
        twins = sum(1 for o in outcomes if o.twin == "same rows as delta-rs")
        lines.append(
            f"{op:9s} changed {by['changed']:3d}, nothing to change {by['unchanged']:3d}, refused {by['refused']:3d}, "
            f"skipped {by['skipped']:3d}, errors {by['error']:3d}; same rows as delta-rs on a twin: {twins}"
        )
        refused = Counter(o.detail for o in outcomes if o.status == "refused")
        for feature, n in sorted(refused.items()):
            lines.append(f"          refused for {feature}: {n}")
        for r in readable:
            o = r.outcomes.get(op)
            if o is not None and o.status == "error":
                lines.append(f"          error on {r.corpus}/{r.name}: {o.detail}")
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
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, name in table_names():
            if argv and name not in argv:
                continue
            report = run_table(spark, corpus, name, Path(tmp))
            reports.append(report)
            if "-v" in os.environ.get("GOLDEN_DML_VERBOSE", "-v"):
                print(corpus, name, report.unreadable or {k: (o.status, o.detail) for k, o in report.outcomes.items()})
    print(summary(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
