"""OPTIMIZE's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    joined,
    option,
    switch,
)


def _text_or_none(value: str | None) -> str | None:
    """A template that rendered nothing means every partition."""
    return value or None


@dataclass(frozen=True, kw_only=True)
class OptimizeSpec(OperationSpec):
    operation = "optimize"
    summary = "OPTIMIZE: compact small files, Z-order, or cluster a liquid-clustered table"

    where: str | None = option(
        templated=True,
        renderer="sql",
        coerce=_text_or_none,
        help="a condition on partition columns: only those partitions",
    )
    target_size: int | None = option(
        templated=True, parse=int, help="bytes per file (default: delta.targetFileSize, else 128 MiB)"
    )
    zorder_by: tuple[str, ...] = joined(templated=True, metavar="C1,C2", help="Z-order by these columns")
    full: bool = switch(help="OPTIMIZE FULL: on a clustered table, also recluster the files clustered by other columns")

    def validate(self) -> None:
        super().validate()
        if self.full and self.zorder_by:
            raise InvalidArgumentError("optimize: --full reclusters a clustered table, which cannot be Z-ordered")
        if self.target_size is not None and self.target_size <= 0:
            raise InvalidArgumentError(f"target_size must be positive, not {self.target_size!r}")
