"""Golden tables that delta-spark 4.4 writes, vendored in ``tests/golden-4.4``.

Each table is a recipe: the SQL delta-spark runs on a path (``{t}`` stands for
``delta.`<path>```), written to exercise one feature or operation, including
what a plain CREATE TABLE gives by default. Next to each table,
``<name>.expected.json`` holds delta-spark's own answers about it (DESCRIBE
DETAIL, DESCRIBE HISTORY, the schema, the live files, the rows at every
version, ``table_changes`` where the change data feed is on, ``_metadata``'s
row ids where row tracking is on): the tests compare every reader of ours with
them, without starting a JVM.

Why vendored: the tables are small (about 450 KB with the answers), building them
takes delta-spark minutes on two cores, and vendored tables are the same bytes
on every run. ``tests/delta_spark/test_golden_4_4_oracle.py`` keeps them honest:
the live oracle reads them in place and must give the recorded answers.

Regenerate (needs the delta-spark jars, ``make test-jars``)::

    python -m tests.delta_spark.golden_4_4            # every table, afresh
    python -m tests.delta_spark.golden_4_4 NAME ...   # just these
    python -m tests.delta_spark.golden_4_4 --keep     # only answers, and missing tables
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where the tables and their answers live.
GOLDEN_44_DIR = Path(__file__).resolve().parent.parent / "golden-4.4"


@dataclass(frozen=True)
class Recipe:
    """One golden table: its statements, in order, and what it exercises."""

    name: str
    statements: tuple[str, ...]
    cdf: bool = False
    row_tracking: bool = False
    notes: str = ""


def _ins(rows: str) -> str:
    return f"INSERT INTO {{t}} VALUES {rows}"


_DV = "'delta.enableDeletionVectors' = 'true'"

RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "default",
        (
            "CREATE TABLE {t} (id BIGINT, name STRING) USING delta",
            _ins("(1, 'a'), (2, 'b')"),
            _ins("(3, 'c')"),
        ),
        notes="CREATE TABLE with no properties: what 4.4 turns on by default",
    ),
    Recipe(
        "partitioned",
        (
            "CREATE TABLE {t} (id INT, day DATE, region STRING, n INT) USING delta PARTITIONED BY (day, region)",
            _ins("(1, DATE'2024-01-01', 'eu', 1), (2, DATE'2024-01-01', 'us', 2), (3, NULL, NULL, 3)"),
            _ins("(4, DATE'2024-01-02', 'a b/c=d%', 4)"),
            "DELETE FROM {t} WHERE region = 'us'",
        ),
    ),
    Recipe(
        "deletion-vectors",
        (
            f"CREATE TABLE {{t}} (id INT, v STRING) USING delta TBLPROPERTIES ({_DV})",
            "INSERT INTO {t} SELECT id, CAST(id AS STRING) FROM range(0, 20)",
            "DELETE FROM {t} WHERE id % 5 = 0",
            "UPDATE {t} SET v = 'updated' WHERE id % 7 = 1",
            "MERGE INTO {t} AS d USING (SELECT id, 'merged' AS v FROM range(15, 25)) AS s ON d.id = s.id "
            "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET d.v = s.v "
            "WHEN NOT MATCHED THEN INSERT *",
        ),
        notes="deletion vectors after DELETE, UPDATE and MERGE",
    ),
    Recipe(
        "column-mapping-name",
        (
            "CREATE TABLE {t} (id INT, a STRING, b INT) USING delta PARTITIONED BY (b) "
            "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
            _ins("(1, 'x', 10), (2, 'y', 20)"),
            "ALTER TABLE {t} RENAME COLUMN a TO `a renamed`",
            "ALTER TABLE {t} DROP COLUMN id",
            "ALTER TABLE {t} ADD COLUMN (id INT)",
            _ins("('z', 30, 3)"),
        ),
    ),
    Recipe(
        "column-mapping-id",
        (
            "CREATE TABLE {t} (id INT, s STRUCT<x: INT, y: STRING>) USING delta "
            "TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
            _ins("(1, named_struct('x', 1, 'y', 'a')), (2, named_struct('x', 2, 'y', 'b'))"),
            "ALTER TABLE {t} RENAME COLUMN s.y TO z",
            _ins("(3, named_struct('x', 3, 'z', 'c'))"),
        ),
    ),
    Recipe(
        "change-data-feed",
        (
            "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
            _ins("(1, 'a'), (2, 'b'), (3, 'c')"),
            "UPDATE {t} SET v = 'B' WHERE id = 2",
            "DELETE FROM {t} WHERE id = 3",
            "MERGE INTO {t} AS d USING (SELECT 1 AS id, 'A' AS v UNION ALL SELECT 4, 'd') AS s ON d.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        ),
        cdf=True,
    ),
    Recipe(
        "change-data-feed-dv",
        (
            "CREATE TABLE {t} (id INT, v STRING) USING delta "
            f"TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', {_DV})",
            "INSERT INTO {t} SELECT id, CAST(id AS STRING) FROM range(0, 10)",
            "DELETE FROM {t} WHERE id < 3",
            "UPDATE {t} SET v = 'u' WHERE id = 5",
        ),
        cdf=True,
        notes="the DELETE writes no change data: a new deletion vector on the same file, which readers diff",
    ),
    Recipe(
        "check-constraints",
        (
            "CREATE TABLE {t} (id INT, n INT) USING delta",
            _ins("(1, 1)"),
            "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (n > 0)",
            _ins("(2, 2)"),
        ),
    ),
    Recipe(
        "generated-columns",
        (
            "CREATE TABLE {t} (id INT, ts TIMESTAMP, day DATE GENERATED ALWAYS AS (CAST(ts AS DATE))) "
            "USING delta PARTITIONED BY (day)",
            "INSERT INTO {t} (id, ts) VALUES (1, TIMESTAMP'2024-03-01 10:00:00'), (2, TIMESTAMP'2024-03-02 23:59:59')",
        ),
    ),
    Recipe(
        "identity-columns",
        (
            "CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5), v STRING) "
            "USING delta",
            "INSERT INTO {t} (v) VALUES ('a'), ('b')",
            "INSERT INTO {t} (v) VALUES ('c')",
        ),
    ),
    Recipe(
        "row-tracking",
        (
            "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
            _ins("(1, 'a'), (2, 'b'), (3, 'c')"),
            _ins("(4, 'd')"),
            "UPDATE {t} SET v = 'B' WHERE id = 2",
        ),
        row_tracking=True,
    ),
    Recipe(
        "in-commit-timestamps",
        (
            "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
            _ins("(1)"),
            _ins("(2)"),
        ),
    ),
    Recipe(
        "type-widening",
        (
            "CREATE TABLE {t} (id INT, s SMALLINT, f FLOAT, d DECIMAL(5, 2)) USING delta "
            "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
            _ins("(1, 1000, 1.5, 123.45)"),
            "ALTER TABLE {t} ALTER COLUMN s TYPE INT",
            "ALTER TABLE {t} ALTER COLUMN f TYPE DOUBLE",
            "ALTER TABLE {t} ALTER COLUMN d TYPE DECIMAL(10, 4)",
            _ins("(2, 100000, 2.25, 123456.7891)"),
        ),
    ),
    Recipe(
        "timestamp-ntz",
        (
            "CREATE TABLE {t} (id INT, ts TIMESTAMP_NTZ, tz TIMESTAMP) USING delta PARTITIONED BY (ts)",
            _ins("(1, TIMESTAMP_NTZ'2024-01-01 12:34:56.789', TIMESTAMP'2024-01-01 12:34:56.789Z')"),
            _ins("(2, NULL, NULL)"),
        ),
    ),
    Recipe(
        "variant",
        (
            "CREATE TABLE {t} (id INT, v VARIANT) USING delta",
            'INSERT INTO {t} SELECT 1, parse_json(\'{{"a": 1, "b": [true, null, "x"]}}\')',
            "INSERT INTO {t} SELECT 2, parse_json('2.5')",
        ),
    ),
    Recipe(
        "v2-checkpoint",
        (
            "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', "
            "'delta.checkpointInterval' = '2')",
            _ins("(1)"),
            _ins("(2)"),
            _ins("(3)"),
        ),
    ),
    Recipe(
        "liquid-clustering",
        (
            "CREATE TABLE {t} (id INT, k STRING) USING delta CLUSTER BY (k)",
            _ins("(1, 'b'), (2, 'a')"),
            _ins("(3, 'c')"),
            "OPTIMIZE {t}",
        ),
    ),
    Recipe(
        "checkpoint-log-cleanup",
        (
            "CREATE TABLE {t} (id INT) USING delta TBLPROPERTIES ('delta.checkpointInterval' = '3')",
            _ins("(1)"),
            _ins("(2)"),
            _ins("(3)"),
            _ins("(4)"),
            _ins("(5)"),
            _ins("(6)"),
            _ins("(7)"),
            _ins("(8)"),
            _ins("(9)"),
        ),
        notes="checkpoints at 3, 6 and 9; the log before the checkpoint at 6 cleaned up",
    ),
    Recipe(
        "restore",
        (
            "CREATE TABLE {t} (id INT) USING delta",
            _ins("(1), (2)"),
            _ins("(3)"),
            "DELETE FROM {t} WHERE id = 1",
            "RESTORE TABLE {t} TO VERSION AS OF 2",
        ),
    ),
    Recipe(
        "optimize",
        (
            "CREATE TABLE {t} (id INT, x INT, y INT) USING delta",
            _ins("(1, 1, 9)"),
            _ins("(2, 5, 5)"),
            _ins("(3, 9, 1)"),
            "OPTIMIZE {t}",
            _ins("(4, 2, 2)"),
            "OPTIMIZE {t} ZORDER BY (x, y)",
        ),
    ),
)


BY_NAME = {r.name: r for r in RECIPES}

#: DESCRIBE DETAIL's fields that depend on where and when the table was made.
_VOLATILE_DETAIL = ("location", "createdAt", "lastModified")


def build(oracle: Any, recipe: Recipe, path: Path) -> None:
    """Run ``recipe`` on delta-spark at ``path`` (which must not exist)."""
    table = f"delta.`{path}`"
    for statement in recipe.statements:
        oracle.sql(statement.format(t=table))
    if recipe.name == "checkpoint-log-cleanup":
        # What delta-spark's log cleanup removes: every log file before a
        # checkpoint (here the one at 6). Its own cleanup, with retentions of
        # 0 seconds and the files' mtimes set in 1970, removed nothing in
        # 4.4; and a deleted-file retention of 0 stops its time travel.
        log = path / "_delta_log"
        for log_file in log.iterdir():
            if log_file.name[:20].isdigit() and int(log_file.name[:20]) < 6:
                log_file.unlink()


def json_rows(frame: Any) -> list[str]:
    """A DataFrame's rows as Spark's own JSON (timestamps in UTC), sorted:
    the form a classic and a Connect session produce alike."""
    return sorted(r[0] for r in frame.selectExpr("to_json(struct(*), map('timeZone', 'UTC')) AS j").collect())


def _millis(value: dt.datetime | None) -> int | None:
    """Connect gives timestamps as naive local datetimes."""
    return None if value is None else round(value.timestamp() * 1000)


def record(oracle: Any, recipe: Recipe, path: Path, every_version: bool = True) -> dict[str, Any]:
    """delta-spark's answers about the table at ``path`` (the rows of the
    latest version only, without ``every_version``)."""
    spark = oracle.session
    location = f"delta.`{path}`"
    detail = {k: v for k, v in oracle.detail(str(path)).items() if k not in _VOLATILE_DETAIL}
    history = [
        {
            "version": h["version"],
            "timestamp": _millis(h["timestamp"]),
            "operation": h["operation"],
            "operationParameters": h["operationParameters"],
        }
        for h in oracle.history(str(path))
    ]
    latest = spark.read.format("delta").load(str(path))
    # inputFiles are Hadoop paths (``file:/root/a%3Ab``: escaped once, as on disk).
    root = "file:" + str(path).rstrip("/") + "/"
    files = sorted(f[len(root) :] for f in latest.inputFiles())
    assert all(f.startswith(root) for f in latest.inputFiles()), latest.inputFiles()
    answers: dict[str, Any] = {
        "name": recipe.name,
        "notes": recipe.notes,
        "version": history[-1]["version"],
        "detail": detail,
        "history": history,
        "schema": json.loads(latest.schema.json()),
        "files": files,
        "rows": {},
    }
    for entry in history if every_version else history[-1:]:
        version = entry["version"]
        try:
            frame = spark.read.format("delta").option("versionAsOf", version).load(str(path))
            answers["rows"][str(version)] = json_rows(frame)
        except Exception as exc:  # a version log cleanup took
            if "AnalysisException" not in type(exc).__name__ and "Delta" not in type(exc).__name__:
                raise
            answers["rows"][str(version)] = {"error": type(exc).__name__}
    if recipe.cdf:
        # Without the commit time: delta-spark takes it from the commit
        # file's mtime, which a checkout resets.
        changes = spark.sql(f"SELECT * FROM table_changes_by_path('{path}', 0)").drop("_commit_timestamp")
        answers["changes"] = json_rows(changes)
    if recipe.row_tracking:
        tracked = spark.sql(
            f"SELECT *, _metadata.row_id AS row_id, _metadata.row_commit_version AS row_commit_version FROM {location}"
        )
        answers["row_tracking"] = json_rows(tracked)
    return answers


def _strip(path: Path) -> None:
    """Drop what a checkout cannot keep or need not: Hadoop's ``.*.crc``
    checksum files and empty directories (``_staged_commits``)."""
    for crc in path.rglob(".*.crc"):
        crc.unlink()
    for directory in sorted((d for d in path.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        if not any(directory.iterdir()):
            directory.rmdir()


def generate(oracle: Any, names: list[str], root: Path = GOLDEN_44_DIR, keep: bool = False) -> None:
    """Build ``names`` afresh under ``root`` (with ``keep``, only those
    missing) and record delta-spark's answers."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        recipe = BY_NAME[name]
        path = root / name
        if not (keep and path.is_dir()):
            shutil.rmtree(path, ignore_errors=True)
            build(oracle, recipe, path)
        answers = record(oracle, recipe, path)
        _strip(path)
        (root / f"{name}.expected.json").write_text(json.dumps(answers, indent=1, sort_keys=True, default=str) + "\n")
        print(path, flush=True)


def load_expected(name: str, root: Path = GOLDEN_44_DIR) -> dict[str, Any]:
    return json.loads((root / f"{name}.expected.json").read_text())


def main(argv: list[str]) -> int:
    import tempfile

    from tests.delta_spark_oracle import DeltaSpark

    keep = "--keep" in argv
    names = [a for a in argv if a != "--keep"] or [r.name for r in RECIPES]
    with tempfile.TemporaryDirectory() as workdir:
        oracle = DeltaSpark(Path(workdir))
        try:
            generate(oracle, names, keep=keep)
        finally:
            oracle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
