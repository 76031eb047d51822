"""CHANGES's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed
from airflow_delta_provider.operations.spec.fields import (
    option,
)

#: Output formats of CHANGES (only ``parquet`` with ``io="arrow"``).
CHANGES_OUTPUT_FORMATS = ("parquet", "json", "csv", "orc")


@dataclass(frozen=True, kw_only=True)
class ChangesSpec(OperationSpec):
    operation = "changes"
    summary = "write the change data feed of a version range"
    reads_only = True
    renamed: ClassVar[Mapping[str, Renamed]] = {
        **OperationSpec.renamed,
        "start": ("start_version", None),
        "end": ("end_version", None),
        "output": ("output_path", None),
    }

    start_version: int = option(
        templated=True,
        flag="--start",
        dest="start",
        required=True,
        parse=int,
        help="the first version whose changes to read",
    )
    end_version: int | None = option(
        templated=True,
        flag="--end",
        dest="end",
        parse=int,
        help="the last version whose changes to read (default: the latest)",
    )
    output_path: str = option(
        templated=True,
        flag="--output",
        dest="output",
        required=True,
        help="the folder to write the changed rows to (replaced)",
    )
    output_format: str = option("parquet", choices=CHANGES_OUTPUT_FORMATS, help="default: parquet")
