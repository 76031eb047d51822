"""DESCRIBE DETAIL and history ranges from the log: ``detail`` agrees with
delta-spark's DESCRIBE DETAIL on every table of the golden 4.4 corpus, and
with delta-rs on a table it wrote; ``history`` selects version ranges."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, TableNotFoundError
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_info import detail
from tests.delta_spark.golden_4_4 import GOLDEN_44_DIR, RECIPES, load_expected

#: DESCRIBE DETAIL's fields whose value a checkout does not change (not the times, not the location).
STABLE_FIELDS = (
    "format", "id", "name", "description", "partitionColumns", "clusteringColumns", "numFiles", "sizeInBytes",
    "properties", "minReaderVersion", "minWriterVersion", "tableFeatures",
)  # fmt: skip


@pytest.mark.parametrize("name", [pytest.param(r.name, id=r.name) for r in RECIPES])
def test_detail_matches_delta_spark_describe_detail(name: str) -> None:
    expected = load_expected(name)
    ours = detail(DeltaTable(GOLDEN_44_DIR / name).snapshot())
    assert {k: ours[k] for k in STABLE_FIELDS} == {k: expected["detail"][k] for k in STABLE_FIELDS}
    assert ours["version"] == expected["version"]
    assert ours["location"] == str(GOLDEN_44_DIR / name)
    assert (ours["protocol"]["minReaderVersion"], ours["protocol"]["minWriterVersion"]) == (
        ours["minReaderVersion"],
        ours["minWriterVersion"],
    )
    assert ours["createdAt"] <= ours["lastModified"]


def test_detail_matches_delta_rs_on_a_table_it_wrote(tmp_path) -> None:
    from deltalake import DeltaTable as RsTable
    from deltalake import write_deltalake

    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "a", "b"]})
    write_deltalake(tmp_path, data, partition_by=["day"], name="orders", description="daily orders",
                    configuration={"delta.appendOnly": "true"})  # fmt: skip
    write_deltalake(tmp_path, data, mode="append")
    theirs = RsTable(tmp_path)
    ours = detail(DeltaTable(tmp_path).snapshot())
    md, proto = theirs.metadata(), theirs.protocol()
    assert (ours["id"], ours["name"], ours["description"], ours["partitionColumns"], ours["properties"]) == (
        md.id, md.name, md.description, md.partition_columns, md.configuration,
    )  # fmt: skip
    assert ours["createdAt"] == md.created_time
    assert (ours["minReaderVersion"], ours["minWriterVersion"]) == (proto.min_reader_version, proto.min_writer_version)
    assert (ours["version"], ours["numFiles"]) == (theirs.version(), len(theirs.file_uris()))
    assert ours["sizeInBytes"] == sum(pa.table(theirs.get_add_actions(flatten=True)).column("size_bytes").to_pylist())
    # The newest commit's time: its file's, as delta-spark's DESCRIBE DETAIL (commitInfo's may differ by some ms).
    commit_file = tmp_path / "_delta_log" / f"{theirs.version():020d}.json"
    assert ours["lastModified"] == int(commit_file.stat().st_mtime * 1000)
    assert [f["name"] for f in ours["schema"]["fields"]] == ["id", "day"]


@pytest.fixture
def five_versions(tmp_path):
    from deltalake import write_deltalake

    for i in range(5):
        write_deltalake(tmp_path, pa.table({"id": [i]}), mode="append" if i else "error")
    return DeltaTable(tmp_path)


@pytest.mark.parametrize(
    "kwargs, versions",
    [
        ({}, [4, 3, 2, 1, 0]),
        ({"limit": 2}, [4, 3]),
        ({"start_version": 3}, [4, 3]),
        ({"end_version": 1}, [1, 0]),
        ({"start_version": 1, "end_version": 3}, [3, 2, 1]),
        ({"start_version": 1, "end_version": 3, "limit": 1}, [3]),
        ({"start_version": 2, "end_version": 2}, [2]),
        ({"start_version": 7}, []),
    ],
)
def test_history_selects_a_version_range_newest_first(five_versions, kwargs, versions) -> None:
    history = five_versions.history(**kwargs)
    assert [h["version"] for h in history] == versions
    assert all(h["operation"] in ("CREATE TABLE", "WRITE") for h in history)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"start_version": 3, "end_version": 2}, "start_version 3 is after end_version 2"),
        ({"start_version": -1}, "start_version must be >= 0"),
        ({"limit": 0}, "limit must be >= 1"),
    ],
)
def test_history_refuses_a_bad_range(five_versions, kwargs, message) -> None:
    with pytest.raises(InvalidInputError, match=message):
        five_versions.history(**kwargs)


def test_history_of_a_missing_table_is_table_not_found(tmp_path) -> None:
    for start in (None, 2):
        with pytest.raises(TableNotFoundError):
            DeltaTable(tmp_path).history(start_version=start)
