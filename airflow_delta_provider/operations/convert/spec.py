"""CONVERT's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError, InvalidInputError
from airflow_delta_provider.operations.convert.partition_spec import parse_partition_spec
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import (
    option,
    pairs,
)


def _partition_columns(value: str | Mapping[str, str] | None) -> str | None:
    """The partition columns as ``"day date, region string"``, also from ``{"day": "date", ...}``."""
    if isinstance(value, Mapping):
        value = ", ".join(f"{name} {type_}" for name, type_ in value.items())
    return value or None


@dataclass(frozen=True, kw_only=True)
class ConvertSpec(OperationSpec):
    """The core does it with no Spark: it reads only the files' footers."""

    operation = "convert"
    summary = "CONVERT TO DELTA: a folder of Parquet files becomes a Delta table in place"
    runs_without_spark = True

    partition_by: str | None = option(
        templated=True,
        coerce=_partition_columns,
        metavar='"COL TYPE, ..."',
        help='the Hive partition columns of the folders, in order, e.g. "day date, region string"',
    )
    table_properties: tuple[tuple[str, str], ...] = pairs(
        templated=True, flag="--property", dest="property", help="table property (delta.*) of the new table"
    )

    def validate(self) -> None:
        super().validate()
        try:
            parse_partition_spec(self.partition_by)
        except InvalidInputError as exc:
            raise InvalidArgumentError(str(exc)) from None

    def needs_spark(self) -> bool:
        return False
