"""CLONE's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed
from airflow_delta_provider.operations.spec.fields import (
    option,
    pairs,
    switch,
)


@dataclass(frozen=True, kw_only=True)
class CloneSpec(OperationSpec):
    """SHALLOW CLONE into the table (the positional TABLE, as every operation
    names the table it changes). The core does it with no Spark: it writes
    only the new table's log."""

    operation = "clone"
    summary = "SHALLOW CLONE: a new table (TABLE) whose files are those of --source"
    renamed: ClassVar[Mapping[str, Renamed]] = {**OperationSpec.renamed, "source": ("source_path", None)}
    runs_without_spark = True

    source_path: str = option(
        templated=True, flag="--source", dest="source", required=True, help="the Delta table to clone: a path or URI"
    )
    version: int | None = option(templated=True, parse=int, help="the source's version to clone (default: its latest)")
    timestamp: str | None = option(
        templated=True,
        help="clone the source's newest version committed at or before this time (ISO 8601, UTC if no zone)",
    )
    replace: bool = switch(help="replace TABLE if it is a Delta table already (CREATE OR REPLACE ... CLONE)")
    table_properties: tuple[tuple[str, str], ...] = pairs(
        templated=True, flag="--property", dest="property", help="table property (delta.*) overriding the source's"
    )

    def validate(self) -> None:
        super().validate()
        if self.version is not None and self.timestamp is not None:
            raise InvalidArgumentError("clone: give the source's --version or --timestamp, not both")
        if self.version is not None and self.version < 0:
            raise InvalidArgumentError(f"cannot clone version {self.version}: versions start at 0")

    def needs_spark(self) -> bool:
        return False
