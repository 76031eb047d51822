"""Where a new table may be created: not over data files that no log tracks.

A folder of parquet files with no ``_delta_log`` is a table of another kind
(a Hive or Spark table, a raw landing folder). Creating a Delta table there
by appending would leave those files invisible to every Delta reader, and
the first VACUUM would delete them; delta-spark and delta-rs both allow it
silently. We refuse, name some of the files, and say how to keep them
(convert the folder with this package's own CONVERT: ``DeltaConvertOperator``
or the CLI's ``convert``) or to replace them on purpose (``mode="overwrite"``).
Hidden names (``_``/``.`` prefixes, as VACUUM reads them) are not data.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_delta_provider.delta.errors import UntrackedDataFilesError
from airflow_delta_provider.delta.storage.hidden_paths import is_hidden_path
from airflow_delta_provider.delta.storage.store import TableStorage

#: How many of the files the error names.
NAMED_FILES = 5


def untracked_data_files(storage: TableStorage, partition_columns: Sequence[str] = ()) -> list[str]:
    """The files under the table root, relative to it, that are not hidden."""
    return sorted(
        meta.path
        for meta in storage.list_tree("")
        if not meta.is_dir and not is_hidden_path(meta.path, partition_columns)
    )


def check_new_table_location(storage: TableStorage, partition_columns: Sequence[str] = ()) -> None:
    """Refuse to create a table where :func:`untracked_data_files` finds any.

    Raises :class:`~airflow_delta_provider.delta.errors.UntrackedDataFilesError`.
    """
    found = untracked_data_files(storage, partition_columns)
    if not found:
        return
    named = ", ".join(found[:NAMED_FILES]) + (
        f" and {len(found) - NAMED_FILES} more" if len(found) > NAMED_FILES else ""
    )
    raise UntrackedDataFilesError(
        f"{storage.location.uri} holds {len(found)} data file(s) but no Delta table (no commit in _delta_log): "
        f"{named}. A table created there would not read them, and VACUUM would delete them. To keep them, "
        f"convert the folder to a Delta table first, in place and with no Spark (DeltaConvertOperator, or "
        f"python -m airflow_delta_provider.spark convert {storage.location.uri}), then append; "
        'to replace them on purpose, write with mode="overwrite"; or write to an empty location'
    )


__all__ = ["NAMED_FILES", "check_new_table_location", "untracked_data_files"]
