"""The interop matrix (:mod:`.matrix`) for OPTIMIZE, Z-order, REORG PURGE, RESTORE, VACUUM, CHECKPOINT with
log cleanup, and CHANGES (the change data feed reader)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.spark.cli import execute, parse_request
from tests.delta_spark.matrix import (
    FEATURE_NAMES,
    Operation,
    cells,
    continue_on_top,
    differences,
    insertable,
    outcome,
    run_cell,
    source_sql,
    table,
    undeclared,
)
from tests.delta_spark.matrix import feature as named


def _no_vectors(f):
    return None if f.name == "deletion_vectors" else "no deletion vectors: REORG PURGE rewrites nothing on both sides"


OPTIMIZE = Operation(
    "optimize",
    ours=lambda c: ["optimize", c.ours_path],
    theirs=lambda c: ["OPTIMIZE {t}"],
)
ZORDER = Operation(
    "zorder",
    ours=lambda c: ["optimize", c.ours_path, "--zorder-by", "v,id"],
    theirs=lambda c: ["OPTIMIZE {t} ZORDER BY (v, id)"],
    skip=lambda f: "delta-spark refuses Z-order on a clustered table" if f.name == "clustering" else None,
)
REORG = Operation(
    "reorg",
    ours=lambda c: ["reorg", c.ours_path, "--purge"],
    theirs=lambda c: ["REORG TABLE {t} APPLY (PURGE)"],
)
RESTORE = Operation(
    "restore",
    ours=lambda c: ["restore", c.ours_path, "--version", "1"],
    theirs=lambda c: ["RESTORE TABLE {t} TO VERSION AS OF 1"],
)


@pytest.mark.parametrize(("operation", "feature"), cells(OPTIMIZE, ZORDER, REORG, RESTORE))
def test_cell(operation, feature, delta_spark, spark, seeds, tmp_path):
    run_cell(delta_spark, spark, seeds, operation, feature, tmp_path)


# VACUUM ---------------------------------------------------------------------


def _files(path: str) -> list[str]:
    """The table's files outside its log, relative to it."""
    root = Path(path)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts)


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_vacuum(feature, delta_spark, spark, seeds, tmp_path):
    """VACUUM RETAIN 0 HOURS deletes the same files as delta-spark's, and records the same VACUUM START and END."""
    f = named(feature)
    ours, twin = seeds.copy(feature, tmp_path / "ours"), seeds.copy(feature, tmp_path / "twin")
    since = seeds.version(feature)
    execute(parse_request(["vacuum", ours, "--retention-hours", "0", "--no-retention-check"]), spark)
    delta_spark.sql(f"VACUUM {table(twin)} RETAIN 0 HOURS")
    assert _files(ours) == _files(twin)
    found = differences(outcome(delta_spark, ours, f, since), outcome(delta_spark, twin, f, since))
    start_ours, start_twin = delta_spark.history(ours)[-2], delta_spark.history(twin)[-2]
    for aspect in ("operation", "operationParameters", "operationMetrics"):
        if start_ours[aspect] != start_twin[aspect]:
            found[f"start {aspect}"] = (start_ours[aspect], start_twin[aspect])
    remaining = undeclared("vacuum", feature, found)
    assert not remaining, f"vacuum on {feature}: ours vs delta-spark's: {remaining}"
    continue_on_top(delta_spark, ours)


# CHECKPOINT and log cleanup ---------------------------------------------------

_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\..+)?\.(parquet|json)$")
#: Action kinds of a checkpoint that say how it is laid out, not what the table is.
_LAYOUT_ACTIONS = ("checkpointMetadata", "sidecar")


def _plain(value):
    """A parquet row's value as JSON would have it: maps as dicts, no nulls, no empty map or list
    (a parquet map reads as a list of pairs, so an empty one cannot tell the two apart)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {k: _plain(v) for k, v in value}
        return [_plain(x) for x in value]
    return value


def _read_actions(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    if path.suffix == ".json":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [_plain(r) for r in pq.read_table(path).to_pylist()]


def checkpoint_content(log: Path, version: int) -> dict[str, list[str]]:
    """The actions of the checkpoint at ``version`` (with its sidecars), by kind, each as sorted JSON."""
    parts = [p for p in log.iterdir() if (m := _CHECKPOINT.match(p.name)) and int(m.group(1)) == version]
    assert parts, f"no checkpoint at version {version} in {sorted(p.name for p in log.iterdir())}"
    actions = [a for p in parts for a in _read_actions(p)]
    for a in list(actions):
        if "sidecar" in a:
            actions += _read_actions(log / "_sidecars" / a["sidecar"]["path"])
    content: dict[str, list[str]] = {}
    for action in actions:
        for kind, body in action.items():
            if body is None or kind in _LAYOUT_ACTIONS:
                continue
            body = _plain(body)
            if kind == "add":
                if isinstance(body.get("stats"), str):
                    body = {**body, "stats": json.loads(body["stats"])}
                # The typed copies of stats and partition values are compared apart.
                for column in ("stats_parsed", "partitionValues_parsed"):
                    if column in body:
                        content.setdefault(f"add {column}", []).append(body["path"])
                        body = {k: v for k, v in body.items() if k != column}
            content.setdefault(kind, []).append(json.dumps(body, sort_keys=True, default=str))
    return {k: sorted(v) for k, v in sorted(content.items())}


def _first_difference(a: dict, b: dict, kind: str) -> tuple[str | None, str | None]:
    only_a, only_b = (
        sorted(set(a.get(kind, [])) - set(b.get(kind, []))),
        sorted(set(b.get(kind, [])) - set(a.get(kind, []))),
    )
    return (only_a[0] if only_a else None, only_b[0] if only_b else None)


def _log_names(log: Path) -> list[str]:
    """The log's commits and checkpoints by version and kind (a V2 checkpoint's name is random)."""
    names = []
    for p in log.iterdir():
        if m := _CHECKPOINT.match(p.name):
            names.append(f"{int(m.group(1))} checkpoint")
        elif p.suffix == ".json" and p.stem.isdigit():
            names.append(f"{int(p.stem)} commit")
    return sorted(names)


def _backdate(log: Path, days: int = 40) -> None:
    old = time.time() - days * 86400
    for p in log.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_checkpoint(feature, delta_spark, spark, seeds, tmp_path):
    """Our checkpoint (and expired-log cleanup) holds what delta-spark's holds at the same version, deletes the
    same logs, and delta-spark reads the table from it alone.

    delta-spark has no CHECKPOINT statement: with ``delta.checkpointInterval`` 1
    it writes one (and cleans up expired logs) after each commit. The twin gets
    two such commits, the log backdated 40 days between them; ours gets the same
    log with the second commit's JSON only, and our ``checkpoint --cleanup-logs``.
    """
    twin = Path(seeds.copy(feature, tmp_path / "twin"))
    n = seeds.version(feature)
    delta_spark.sql(f"ALTER TABLE {table(twin)} SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    _backdate(twin / "_delta_log")
    ours = Path(shutil.copytree(twin, tmp_path / "ours"))  # copy2: the backdated times stay
    delta_spark.sql(f"ALTER TABLE {table(twin)} SET TBLPROPERTIES ('team' = 'data')")
    commit = f"{n + 2:020}.json"
    shutil.copy(twin / "_delta_log" / commit, ours / "_delta_log" / commit)
    execute(parse_request(["checkpoint", str(ours), "--cleanup-logs"]), spark)

    found = {}
    a, b = checkpoint_content(ours / "_delta_log", n + 2), checkpoint_content(twin / "_delta_log", n + 2)
    for kind in sorted(set(a) | set(b)):
        if a.get(kind) != b.get(kind):
            found[f"checkpoint {kind}"] = (len(a.get(kind, [])), len(b.get(kind, [])), _first_difference(a, b, kind))
    if _log_names(ours / "_delta_log") != _log_names(twin / "_delta_log"):
        found["log after cleanup"] = (_log_names(ours / "_delta_log"), _log_names(twin / "_delta_log"))
    remaining = undeclared("checkpoint", feature, found)
    assert not remaining, f"checkpoint on {feature}: ours vs delta-spark's: {remaining}"

    # Only our checkpoint and the last commit left: delta-spark reads the table from our checkpoint.
    for p in (ours / "_delta_log").iterdir():
        m = _CHECKPOINT.match(p.name)
        if (m and int(m.group(1)) < n + 2) or (
            p.suffix in (".json", ".crc") and p.stem.isdigit() and int(p.stem) < n + 2
        ):
            p.unlink()
    f = named(feature)
    mine, theirs = outcome(delta_spark, str(ours), f, n + 2), outcome(delta_spark, str(twin), f, n + 2)
    assert (mine.rows, mine.protocol, mine.properties, mine.row_ids) == (
        theirs.rows, theirs.protocol, theirs.properties, theirs.row_ids
    )  # fmt: skip
    assert [h["version"] for h in delta_spark.history(str(ours))] == [n + 2]
    assert sorted(delta_spark.rows(str(ours), columns="id")) == sorted(
        delta_spark.sql(f"SELECT id FROM {table(ours)} VERSION AS OF {n + 2}")
    )
    continue_on_top(delta_spark, str(ours))


# CHANGES ---------------------------------------------------------------------


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_changes(feature, delta_spark, spark, seeds, tmp_path):
    """Our change data feed reader writes the rows delta-spark's ``table_changes`` reads, on every feature
    (turned on where the seed has it off: there, both first refuse)."""
    f = named(feature)
    path = seeds.copy(feature, tmp_path / "t")
    t = table(path)
    out = tmp_path / "changes"
    if not f.cdf:
        with pytest.raises(DeltaError, match=r"(?i)change data"):
            execute(parse_request(["changes", path, "--start", "1", "--output", str(out)]), spark)
        with pytest.raises(Exception, match=r"(?i)change data"):
            delta_spark.sql(f"SELECT * FROM table_changes_by_path('{path}', 1)")
        delta_spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    start = 1 if f.cdf else delta_spark.history(path)[-1]["version"] + 1  # the first version with changes
    delta_spark.sql(f"UPDATE {t} SET v = v + 1 WHERE id % 10 = 2")
    delta_spark.sql(f"DELETE FROM {t} WHERE id % 10 = 4")
    cols = ", ".join(insertable(f))
    delta_spark.sql(f"INSERT INTO {t} ({cols}) {source_sql(f, range(40, 44))}")
    execute(parse_request(["changes", path, "--start", str(start), "--output", str(out)]), spark)

    columns = [r.col_name for r in delta_spark.sql(f"DESCRIBE {t}") if r.col_name and not r.col_name.startswith("#")]
    data = ", ".join(("to_json(var) AS var" if c == "var" else c) for c in dict.fromkeys(columns))
    data += ", _change_type, _commit_version, _commit_timestamp"
    mine = sorted(tuple(r) for r in delta_spark.sql(f"SELECT {data} FROM parquet.`{out}`"))
    theirs = sorted(tuple(r) for r in delta_spark.sql(f"SELECT {data} FROM table_changes_by_path('{path}', {start})"))
    found = {"changes": (mine, theirs)} if mine != theirs else {}
    remaining = undeclared("changes", feature, found)
    assert not remaining, f"changes on {feature}: ours vs delta-spark's: {remaining}"
