"""Unit tests for ``delta/cli.py`` (``python -m airflow_delta_provider.delta``).

Most tests call :func:`main` in-process; three run the module as a real
subprocess to check the entry point, stdout and the exit code end to end.
Under capsys and in a subprocess stdout is not a terminal, so the default
format is JSON; ``delta/cli_format.py`` has its own tests for the text.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.cli import main
from airflow_delta_provider.delta.cli_format import HISTORY_HEADERS
from airflow_delta_provider.delta.table import DeltaTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def table(tmp_path, new_table, data_file):
    """Version 0: two files (partition values with a space and a colon);
    version 1: one more file; version 2: the first file removed."""
    root = tmp_path / "t"
    root.mkdir()
    f1 = data_file(root, pa.table({"id": [1, 2, 3]}), {"p": "a b:c"})
    f2 = data_file(root, pa.table({"id": [4]}), {"p": "x"})
    new_table(root, SCHEMA, ["p"], {"delta.appendOnly": "false"}, [f1, f2])
    t = DeltaTable(root)
    for action in (data_file(root, pa.table({"id": [5, 6]}), {"p": "x"}), f1.remove(int(time.time() * 1000))):
        txn = t.transaction("WRITE" if isinstance(action, AddFile) else "DELETE", {"mode": "Append"}, t.snapshot())
        txn.add(action)
        txn.commit(metrics={"numFiles": 1}, token=f"tok-{t.latest_version() + 1}")
    return t, f1, f2


def run(capsys, *argv: str) -> tuple[int, object, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_describe_latest(table, capsys):
    t, _, _ = table
    code, doc, err = run(capsys, "describe", t.root)
    snap = t.snapshot()
    assert code == 0 and err == ""
    assert doc["version"] == 2 and doc["timestamp"] == snap.timestamp
    assert doc["protocol"] == {"minReaderVersion": 1, "minWriterVersion": 2}
    assert doc["metadata"] == {
        "id": snap.metadata.id,
        "name": None,
        "partitionColumns": ["p"],
        "configuration": {"delta.appendOnly": "false"},
        "schema": snap.schema,
    }
    assert doc["metadata"]["schema"]["fields"][0] == {"name": "id", "type": "long", "nullable": True, "metadata": {}}
    assert doc["numFiles"] == 2 and doc["numRecords"] == 3
    assert doc["sizeInBytes"] == sum(os.path.getsize(snap.file_path(f)) for f in snap.files)
    assert {f["path"]: (f["partitionValues"], f["numRecords"]) for f in doc["files"]} == {
        f.path: (f.partition_values, f.num_records) for f in snap.files
    }
    assert all(set(f) == {"path", "partitionValues", "size", "numRecords", "deletionVector"} for f in doc["files"])
    assert all(f["deletionVector"] is None for f in doc["files"])


def test_describe_paths_are_uri_decoded(table, capsys):
    t, f1, _ = table
    _, doc, _ = run(capsys, "describe", t.root, "--version", "0")
    paths = {f["partitionValues"]["p"]: f["path"] for f in doc["files"]}
    assert "%" in f1.path  # the log spells it URI-encoded ...
    assert paths["a b:c"] == f1.path.replace("%25", "%").replace("%20", " ")  # ... describe decodes it once
    assert paths["a b:c"].startswith("p=a b%3Ac/")  # the Hive escape of ':' stays
    assert os.path.exists(os.path.join(t.root, paths["a b:c"]))


def test_describe_by_version(table, capsys):
    t, _, _ = table
    code, doc, _ = run(capsys, "describe", t.root, "--version", "0")
    assert code == 0 and doc["version"] == 0
    assert doc["numFiles"] == 2 and doc["numRecords"] == 4


def test_describe_by_timestamp(table, capsys):
    t, _, _ = table
    log = Path(t.root) / "_delta_log"
    base = 1_700_000_000
    for v in range(3):
        os.utime(log / f"{v:020d}.json", (base + 100 * v, base + 100 * v))
    when = dt.datetime.fromtimestamp(base + 150, dt.timezone.utc).isoformat()
    code, doc, _ = run(capsys, "describe", t.root, "--timestamp", when)
    assert code == 0 and doc["version"] == 1 and doc["numFiles"] == 3
    assert doc["timestamp"] == (base + 100) * 1000


def test_describe_omits_num_records_without_stats(tmp_path, new_table, capsys):
    new_table(tmp_path, SCHEMA, ["p"], {}, [AddFile("p=a/f.parquet", {"p": "a"}, 10, 1)])
    _, doc, _ = run(capsys, "describe", str(tmp_path))
    assert "numRecords" not in doc
    assert doc["files"] == [
        {"path": "p=a/f.parquet", "partitionValues": {"p": "a"}, "size": 10, "numRecords": None, "deletionVector": None}
    ]


def test_describe_accepts_a_file_uri(table, capsys):
    t, _, _ = table
    _, doc, _ = run(capsys, "describe", "file://" + t.root)
    assert doc["version"] == 2


def test_history_newest_first_with_limit(table, capsys):
    t, _, _ = table
    code, hist, _ = run(capsys, "history", t.root)
    assert code == 0
    assert [h["version"] for h in hist] == [2, 1, 0]
    assert [h["operation"] for h in hist] == ["DELETE", "WRITE", "CREATE TABLE"]
    assert hist[0]["operationMetrics"] == {"numFiles": "1"} and hist[0]["readVersion"] == 1
    _, hist, _ = run(capsys, "history", t.root, "--limit", "2")
    assert [h["version"] for h in hist] == [2, 1]


def test_history_of_a_version_range(table, capsys):
    t, _, _ = table
    _, hist, _ = run(capsys, "history", t.root, "--start-version", "1")
    assert [h["version"] for h in hist] == [2, 1]
    _, hist, _ = run(capsys, "history", t.root, "--start-version", "0", "--end-version", "1", "--limit", "1")
    assert [h["version"] for h in hist] == [1]
    code, out, err = run(capsys, "history", t.root, "--start-version", "2", "--end-version", "1")
    assert (code, out, err.strip()) == (2, None, "InvalidInputError: start_version 2 is after end_version 1")


def test_history_table_has_a_header_and_one_line_per_commit(table, capsys):
    t, _, _ = table
    code = main(["history", t.root, "--format", "table"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    header, *rows = out.splitlines()
    assert header.split() == list(HISTORY_HEADERS)
    assert [row.split()[0] for row in rows] == ["2", "1", "0"]
    assert [row.split()[2] for row in rows[:2]] == ["DELETE", "WRITE"] and " CREATE TABLE " in rows[2]
    assert "mode=Append" in rows[0] and "numFiles=1" in rows[0]
    assert all(row.split()[1].endswith("Z") for row in rows)  # ISO 8601 in UTC


def test_describe_table_shows_the_overview_schema_and_files(table, capsys):
    t, _, _ = table
    code = main(["describe", t.root, "--format", "table"])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0].split() == ["version:", "2"] and "numFiles:          2" in lines
    assert "configuration:     delta.appendOnly=false" in lines
    assert "partitionColumns:  p" in lines
    schema = lines.index("schema (2 columns):")
    assert [line.split() for line in lines[schema + 1 : schema + 4]] == [
        ["column", "type", "nullable"],
        ["id", "long", "true"],
        ["p", "string", "true"],
    ]
    files = lines.index("files (2):")
    assert lines[files + 1].split() == ["path", "partitionValues", "size", "numRecords", "dvCardinality"]
    assert len(lines) == files + 4
    assert sorted(line.split()[1:4:2] for line in lines[files + 2 :]) == [["p=x", "1"], ["p=x", "2"]]


def test_json_format_is_the_default_off_a_terminal(table, capsys):
    t, _, _ = table
    for command in ("history", "describe"):
        assert main([command, t.root]) == 0
        default = capsys.readouterr().out
        assert main([command, t.root, "--format", "json"]) == 0
        assert capsys.readouterr().out == default
        assert default.count("\n") == 1 and json.loads(default)


def test_table_format_is_the_default_on_a_terminal(table, capsys, monkeypatch):
    t, _, _ = table
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["history", t.root]) == 0
    assert capsys.readouterr().out.startswith("version  timestamp")
    assert main(["history", t.root, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["version"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["describe", "{missing}"], "TableNotFoundError"),
        (["history", "{missing}"], "TableNotFoundError"),
        (["describe", "{table}", "--version", "9"], "VersionNotFoundError"),
        (["describe", "{table}", "--version", "-1"], "--version"),
        (["describe", "{table}", "--timestamp", "not-a-time"], "ISO 8601"),
        (["describe", "{table}", "--timestamp", "2001-01-01T00:00:00Z"], "before the earliest"),
        (["describe", "{table}", "--version", "0", "--timestamp", "2001-01-01"], "not allowed with"),
        (["history", "{table}", "--limit", "0"], "--limit"),
        (["history", "{table}", "--limit", "x"], "invalid int"),
        (["history", "{table}", "--format", "xml"], "invalid choice"),
        (["describe", "{table}", "--format", "yaml"], "invalid choice"),
        (["frobnicate", "{table}"], "invalid choice"),
        ([], "required"),
    ],
)
def test_errors_exit_2_with_one_stderr_line(table, tmp_path, capsys, argv, message):
    t, _, _ = table
    argv = [a.format(missing=str(tmp_path / "missing"), table=t.root) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out is None
    assert err.count("\n") == 1 and err.endswith("\n")
    assert message in err


def test_describe_counts_live_rows_of_a_deletion_vector_table(golden_dir, capsys):
    """dv-partitioned-with-checkpoint: each file's DV is shown, and the
    top-level numRecords is the stats' numRecords minus the DV cardinalities."""
    path = golden_dir / "dv-partitioned-with-checkpoint"
    snap = DeltaTable(path).snapshot()
    code, doc, _ = run(capsys, "describe", str(path))
    assert code == 0 and doc["version"] == snap.version
    files = {f["path"]: f for f in doc["files"]}
    with_dv = [f for f in doc["files"] if f["deletionVector"] is not None]
    assert with_dv and all(set(f["deletionVector"]) == {"storageType", "cardinality"} for f in with_dv)
    for add in snap.files:
        shown = files[add.path]
        assert shown["numRecords"] == add.num_records  # the file's own stats
        dv = add.deletion_vector
        assert shown["deletionVector"] == (
            {"storageType": dv.storage_type, "cardinality": dv.cardinality} if dv else None
        )
    hidden = sum(f["deletionVector"]["cardinality"] for f in with_dv)
    assert doc["numRecords"] == sum(f["numRecords"] for f in doc["files"]) - hidden == 35  # rows DuckDB reads


def test_unsupported_feature_is_an_error_naming_it(tmp_path, capsys):
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / f"{0:020d}.json").write_text(
        json.dumps(
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["variantShredding"],
                    "writerFeatures": ["variantShredding"],
                }
            }
        )
        + "\n"
        + json.dumps(
            {
                "metaData": {
                    "id": "x",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": '{"type":"struct","fields":[]}',
                    "partitionColumns": [],
                    "configuration": {},
                }
            }
        )
        + "\n"
    )
    code, _, err = run(capsys, "describe", str(tmp_path))
    assert code == 2 and err.startswith("UnsupportedFeatureError: ") and "variantShredding" in err


def _subprocess(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "airflow_delta_provider.delta", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_subprocess_describe_and_history(table):
    t, _, _ = table
    proc = _subprocess("describe", t.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1
    doc = json.loads(proc.stdout)
    assert doc["version"] == 2 and doc["numFiles"] == 2
    proc = _subprocess("history", t.root, "--limit", "1")
    assert proc.returncode == 0 and [h["version"] for h in json.loads(proc.stdout)] == [2]


def test_subprocess_history_as_a_table(table):
    t, _, _ = table
    proc = _subprocess("history", t.root, "--format", "table")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.startswith("version  timestamp  ") and len(rows) == 3
    assert [row.split()[2] for row in rows] == ["DELETE", "WRITE", "CREATE"]


def test_subprocess_error_exit_code_and_stderr(tmp_path):
    proc = _subprocess("describe", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("TableNotFoundError: ")


def test_describe_shows_timestamp_ntz_types_and_partition_values(golden_dir, capsys):
    """data-reader-timestamp_ntz: the timestampNtz feature, the type and the
    partition values as logged (wall-clock text, no zone)."""
    code, doc, _ = run(capsys, "describe", str(golden_dir / "data-reader-timestamp_ntz"))
    assert code == 0
    assert doc["protocol"]["readerFeatures"] == doc["protocol"]["writerFeatures"] == ["timestampNtz"]
    assert [f["type"] for f in doc["metadata"]["schema"]["fields"]] == ["integer", "timestamp_ntz", "timestamp_ntz"]
    assert sorted({json.dumps(f["partitionValues"]) for f in doc["files"]}) == [
        '{"tsNtzPartition": "2013-07-05 17:01:00.123456"}',
        '{"tsNtzPartition": "2021-11-18 02:30:00.123456"}',
        '{"tsNtzPartition": null}',
    ]
    assert doc["numRecords"] == 9


def test_health_prints_the_report_and_the_decisions(table, capsys, tmp_path):
    t, _f1, _f2 = table
    page = tmp_path / "health.html"
    code, out, _err = run(capsys, "health", t.root, "--threshold", "min_small_files=3", "--html", str(page))
    assert code == 0 and isinstance(out, dict)
    assert (out["report"]["numFiles"], out["report"]["version"], out["report"]["numTombstones"]) == (2, 2, 1)
    assert [d["step"] for d in out["decisions"] if d["due"]] == []  # two small files in partition x
    assert '<svg id="file-size-histogram"' in page.read_text()
    code, out, _err = run(capsys, "health", t.root, "--threshold", "min_small_files=2")
    optimize = out["decisions"][0]
    assert optimize["due"] and optimize["arguments"] == {"where": "(`p` = 'x')"}
    assert main(["health", t.root, "--format", "table", "--threshold", "min_small_files=2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["health", "value"]
    assert any(line.startswith("optimize") and "DUE" in line and "where=(`p` = 'x')" in line for line in lines)


def test_health_refuses_an_unknown_threshold(table, capsys):
    t, _f1, _f2 = table
    assert main(["health", t.root, "--threshold", "smallest=3"]) == 2
    assert "InvalidInputError: unknown maintenance thresholds ['smallest']" in capsys.readouterr().err
    assert main(["health", t.root, "--threshold", "smallest"]) == 2
    assert "--threshold takes NAME=VALUE" in capsys.readouterr().err
