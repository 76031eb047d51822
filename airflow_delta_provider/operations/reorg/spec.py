"""REORG's arguments: the one declaration of its options."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
    switch,
)


@dataclass(frozen=True, kw_only=True)
class ReorgSpec(OperationSpec):
    operation = "reorg"
    summary = "REORG ... APPLY (PURGE) of deletion vectors"

    purge: bool = switch(in_operator=False, required=True, help="rewrite files that carry deletion vectors")
    min_deleted_ratio: float = option(
        0.0, templated=True, parse=float, help="only files whose vector hides more than this share"
    )

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.min_deleted_ratio < 1.0:
            raise InvalidArgumentError(
                f"min_deleted_ratio must be at least 0 and below 1, not {self.min_deleted_ratio!r}"
            )
