"""CommitFilter and partition predicates: which commits a watcher fires on."""

from __future__ import annotations

import json

import pytest

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.log.commit_summary import CommitSummary
from airflow_delta_provider.delta.watch.commit_filter import CommitFilter, PartitionScheme, partition_predicate

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "ds", "type": "date", "nullable": True, "metadata": {}},
        {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
    ],
}
METADATA = Metadata.new(json.dumps(SCHEMA), ["ds", "n"], created_time=0)


def _commit(*actions: dict, operation: str = "WRITE") -> CommitSummary:
    lines = [{"commitInfo": {"operation": operation, "timestamp": 5}}, *actions]
    return CommitSummary.parse(1, "\n".join(json.dumps(a) for a in lines).encode())


def _add(ds: str | None, n: str | None = "1", data_change: bool = True) -> dict:
    return {"add": {"path": f"f{ds}{n}", "partitionValues": {"ds": ds, "n": n}, "size": 1,
                    "modificationTime": 0, "dataChange": data_change}}  # fmt: skip


def _remove(ds: str | None, data_change: bool = True, with_partition: bool = True) -> dict:
    body = {"path": f"r{ds}", "deletionTimestamp": 0, "dataChange": data_change}
    if with_partition:
        body["partitionValues"] = {"ds": ds, "n": "1"}
    return {"remove": body}


def _cdc(ds: str) -> dict:
    return {"cdc": {"path": f"_change_data/c{ds}", "partitionValues": {"ds": ds, "n": "1"}, "size": 1,
                    "dataChange": False}}  # fmt: skip


def _accepts(commit_filter: CommitFilter, commit: CommitSummary) -> bool:
    matcher = None
    if commit_filter.partition is not None:
        matcher = PartitionScheme.of(METADATA).matcher(commit_filter.partition)
    return commit_filter.accepts(commit, matcher)


def test_data_changes_are_files_with_data_change_or_change_data():
    data_changes = CommitFilter()
    assert _accepts(data_changes, _commit(_add("2024-01-01")))
    assert _accepts(data_changes, _commit(_remove("2024-01-01")))
    assert _accepts(data_changes, _commit(_cdc("2024-01-01")))  # cdc files are dataChange false by protocol
    assert not _accepts(data_changes, _commit(_add("2024-01-01", data_change=False), _remove("x", data_change=False)))
    assert not _accepts(data_changes, _commit({"metaData": METADATA.to_json()}, operation="ADD COLUMNS"))
    assert not _accepts(data_changes, _commit(operation="VACUUM END"))
    assert _accepts(CommitFilter(data_changes_only=False), _commit(operation="VACUUM END"))


def test_operations_are_matched_without_regard_to_case():
    merges = CommitFilter.build(operations=["merge", "WRITE"])
    assert merges.operations == frozenset({"MERGE", "WRITE"})
    assert _accepts(merges, _commit(_add("2024-01-01"), operation="MERGE"))
    assert not _accepts(merges, _commit(_add("2024-01-01"), operation="DELETE"))
    # Both filters hold: an OPTIMIZE passes an operations filter only with data_changes_only off.
    optimize = _commit(_add("2024-01-01", data_change=False), operation="OPTIMIZE")
    assert not _accepts(CommitFilter.build(operations=["OPTIMIZE"]), optimize)
    assert _accepts(CommitFilter.build(operations=["OPTIMIZE"], data_changes_only=False), optimize)


def test_partition_filter_reads_the_files_partition_values():
    day = CommitFilter.build(partition={"ds": "2024-01-02"})
    assert _accepts(day, _commit(_add("2024-01-01"), _add("2024-01-02")))
    assert not _accepts(day, _commit(_add("2024-01-01")))
    assert _accepts(day, _commit(_remove("2024-01-02")))
    assert _accepts(day, _commit(_cdc("2024-01-02")))
    # A rewrite of the partition that changes no data does not pass, unless every commit counts.
    rewrite = _commit(_add("2024-01-02", data_change=False), _remove("2024-01-02", data_change=False))
    assert not _accepts(day, rewrite)
    assert _accepts(CommitFilter.build(partition={"ds": "2024-01-02"}, data_changes_only=False), rewrite)
    # A tombstone without partition values (an old writer's) may be anywhere: it passes.
    assert _accepts(day, _commit(_remove("2024-01-01", with_partition=False)))


def test_partition_values_are_typed_as_the_columns():
    assert _accepts(CommitFilter.build(partition={"n": 1}), _commit(_add("2024-01-01", n="1")))
    assert _accepts(CommitFilter.build(partition={"n": "1"}), _commit(_add("2024-01-01", n="1")))
    assert not _accepts(CommitFilter.build(partition={"n": 10}), _commit(_add("2024-01-01", n="1")))
    assert _accepts(CommitFilter.build(partition={"n": " 1 "}), _commit(_add("2024-01-01", n="1")))
    with pytest.raises(
        InvalidInputError, match=r"partition value 'one' of n is not a number \(n is integer\)"
    ):
        _accepts(CommitFilter.build(partition={"n": "one"}), _commit(_add("2024-01-01", n="1")))
    assert _accepts(CommitFilter.build(partition={"ds": None}), _commit(_add(None)))
    assert not _accepts(CommitFilter.build(partition={"ds": None}), _commit(_add("2024-01-01")))
    ranged = CommitFilter.build(partition="ds >= '2024-01-02' AND n < 5")
    assert _accepts(ranged, _commit(_add("2024-01-03", n="4")))
    assert not _accepts(ranged, _commit(_add("2024-01-01", n="4")))


def test_partition_predicate_of_a_mapping_quotes_names_and_values():
    assert partition_predicate({"ds": "it's", "n": 3, "odd col": None}).sql == (
        "`ds` = 'it\\'s' AND `n` = 3 AND `odd col` IS NULL"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"operations": "WRITE"}, "list of operation names"),
        ({"operations": []}, "operations is empty"),
        ({"operations": ["WRITE", ""]}, "list of operation names"),
        ({"partition": {}}, "mapping of partition values"),
        ({"partition": "  "}, "non-empty SQL predicate"),
        ({"partition": ["ds"]}, "mapping of partition values"),
        ({"partition": "ds = = 1"}, "cannot parse condition .ds = = 1."),
    ],
)
def test_bad_filters_are_refused_with_their_reason(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        CommitFilter.build(**kwargs)


def test_partition_filter_must_name_partition_columns():
    scheme = PartitionScheme.of(METADATA)
    with pytest.raises(
        InvalidInputError, match=r"reads id, which is not a partition column of t \(partitioned by ds, n\)"
    ):
        scheme.matcher({"id": 1}, "t")
    with pytest.raises(InvalidInputError, match="dz, id, which are not partition columns"):
        scheme.matcher("dz = 1 OR id = 2", "t")
    unpartitioned = PartitionScheme.of(Metadata.new(json.dumps(SCHEMA), [], created_time=0))
    with pytest.raises(InvalidInputError, match="t is not partitioned"):
        unpartitioned.matcher({"ds": "2024-01-01"}, "t")


def test_column_mapping_keys_partition_values_by_physical_name():
    schema = json.loads(json.dumps(SCHEMA))
    for i, field in enumerate(schema["fields"]):
        field["metadata"] = {"delta.columnMapping.id": i + 1, "delta.columnMapping.physicalName": f"col-{i}"}
    metadata = Metadata.new(json.dumps(schema), ["ds"], {"delta.columnMapping.mode": "name"}, created_time=0)
    matcher = PartitionScheme.of(metadata).matcher({"ds": "2024-01-02"})
    commit = _commit({"add": {"path": "a", "partitionValues": {"col-1": "2024-01-02"}, "size": 1,
                              "modificationTime": 0, "dataChange": True}})  # fmt: skip
    assert CommitFilter.build(partition={"ds": "2024-01-02"}).accepts(commit, matcher)
