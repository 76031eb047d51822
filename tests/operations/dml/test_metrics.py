"""The typed metrics of UPDATE, DELETE and REORG: delta-spark's names, in its order."""

from __future__ import annotations

import dataclasses

import pytest

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.delete.metrics import DeleteMetrics
from airflow_delta_provider.operations.reorg.metrics import ReorgMetrics, file_sizes
from airflow_delta_provider.operations.update.metrics import UpdateMetrics
from airflow_delta_provider.operations.update.spec import UpdateSpec

DML_TAIL = [
    "numAddedFiles",
    "numRemovedFiles",
    "numCopiedRows",
    "numAddedChangeFiles",
    "numAddedBytes",
    "numRemovedBytes",
    "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved",
    "numDeletionVectorsUpdated",
    "executionTimeMs",
    "scanTimeMs",
    "rewriteTimeMs",
]


def _numbered(cls):
    return cls(**{f.name: i for i, f in enumerate(dataclasses.fields(cls))})


@pytest.mark.parametrize(("cls", "rows"), [(UpdateMetrics, "numUpdatedRows"), (DeleteMetrics, "numDeletedRows")])
def test_dml_metrics_name_the_changed_rows_first(cls, rows) -> None:
    metrics = _numbered(cls)
    assert list(metrics) == [rows, *DML_TAIL]
    assert metrics.commit_metrics() == metrics.to_dict() == dict(zip([rows, *DML_TAIL], range(13)))


def test_reorg_commits_without_the_purged_rows_and_the_time() -> None:
    metrics = ReorgMetrics(
        num_added_files=1,
        num_removed_files=2,
        num_added_bytes=30,
        num_removed_bytes=40,
        **file_sizes([30]),
        num_deletion_vectors_removed=2,
        num_purged_rows=5,
        execution_time_ms=9,
    )
    assert list(metrics)[4:9] == ["minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize"]
    assert metrics["numPurgedRows"] == 5
    assert "numPurgedRows" not in metrics.commit_metrics() and "executionTimeMs" not in metrics.commit_metrics()
    assert file_sizes([]) == dict.fromkeys(
        ["min_file_size", "p25_file_size", "p50_file_size", "p75_file_size", "max_file_size"], 0
    )


@pytest.mark.parametrize(
    ("updates", "message"), [((), "at least one SET"), ((("val", " "),), "SET val= has an empty expression")]
)
def test_update_spec_refuses_what_it_cannot_set(updates, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        UpdateSpec(table_path="/t", updates=updates)
