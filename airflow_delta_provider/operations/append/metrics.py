"""APPEND's metrics: delta-spark's WRITE ``operationMetrics``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_delta_provider.operations.result import OperationMetrics

if TYPE_CHECKING:
    from airflow_delta_provider.delta.actions.model import AddFile, RemoveFile


@dataclass(frozen=True)
class AppendMetrics(OperationMetrics):
    """What a WRITE wrote and, for an overwrite, removed; the ``replace_where``
    ones count rewritten files and copied rows as output, as delta-spark does."""

    num_files: int
    num_output_rows: int
    num_output_bytes: int
    #: An overwrite's: the files (and their bytes) it removed.
    num_removed_files: int | None = None
    num_removed_bytes: int | None = None
    #: A ``replace_where`` overwrite's: the rows its DELETE copied and deleted, what it wrote for them.
    num_copied_rows: int | None = None
    num_deleted_rows: int | None = None
    num_added_change_files: int | None = None
    num_deletion_vectors_added: int | None = None

    @classmethod
    def written(cls, files: Sequence[AddFile]) -> AppendMetrics:
        """An append's: the files written, their rows and bytes."""
        return cls(
            num_files=len(files),
            num_output_rows=sum(a.num_records or 0 for a in files),
            num_output_bytes=sum(a.size for a in files),
        )

    @classmethod
    def overwritten(cls, files: Sequence[AddFile], removed: Iterable[AddFile | RemoveFile]) -> AppendMetrics:
        """An overwrite's: the files written, and those removed."""
        gone = list(removed)
        return cls(
            num_files=len(files),
            num_output_rows=sum(a.num_records or 0 for a in files),
            num_output_bytes=sum(a.size for a in files),
            num_removed_files=len(gone),
            num_removed_bytes=sum(f.size or 0 for f in gone),
        )


__all__ = ["AppendMetrics"]
