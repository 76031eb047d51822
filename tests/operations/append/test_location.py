"""A new table is not created over data files that no Delta log tracks."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, UntrackedDataFilesError
from airflow_delta_provider.delta.storage import open_storage
from airflow_delta_provider.operations.append.location import (
    check_new_table_location,
    untracked_data_files,
)


def _touch(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")


def test_hidden_files_and_an_empty_or_absent_folder_are_no_data(tmp_path):
    assert untracked_data_files(open_storage(str(tmp_path / "absent"))) == []
    _touch(tmp_path, "_SUCCESS", ".part-0.parquet.crc", "_delta_log/_last_checkpoint", "_tmp/part-1.parquet")
    check_new_table_location(open_storage(str(tmp_path)))


def test_data_files_at_any_depth_are_refused_naming_some(tmp_path):
    names = [f"part-{i}.parquet" for i in range(6)] + ["ds=2024-01-01/part-9.parquet", "_p=1/part-7.parquet"]
    _touch(tmp_path, *names, "_SUCCESS")
    storage = open_storage(str(tmp_path))
    # "_p=1" is hidden unless _p is a partition column of the table being created.
    assert untracked_data_files(storage) == sorted(n for n in names if not n.startswith("_"))
    assert "_p=1/part-7.parquet" in untracked_data_files(storage, ["_p"])
    with pytest.raises(UntrackedDataFilesError) as raised:
        check_new_table_location(storage)
    message = str(raised.value)
    assert message.startswith(f"{storage.root} holds 7 data file(s) but no Delta table")
    assert (
        "ds=2024-01-01/part-9.parquet, part-0.parquet, part-1.parquet, part-2.parquet, part-3.parquet and 2 more"
        in message
    )
    # Our own CONVERT, as the operator and as the CLI, not another engine's.
    assert "DeltaConvertOperator" in message and 'mode="overwrite"' in message
    assert f"python -m airflow_delta_provider.spark convert {storage.location.uri}" in message
    assert "convert_to_deltalake" not in message and "delta-spark" not in message
    assert isinstance(raised.value, InvalidInputError)  # bad input: the task is not retried
