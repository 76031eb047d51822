"""REGISTER's arguments: the table's name in a catalog, and where it is stored."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_delta_provider.delta.catalog.reference import is_catalog_reference
from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.base import OperationSpec, catalog_location


@dataclass(frozen=True, kw_only=True)
class RegisterSpec(OperationSpec):
    operation = "register"
    summary = "create the catalog entry (uc://, glue://, hms://) of a Delta table stored at --location"
    runs_without_spark = True
    creates_table = True

    location: str | None = catalog_location()

    def validate(self) -> None:
        super().validate()
        if not is_catalog_reference(self.table_path) and self.table_path != self.location:
            raise InvalidArgumentError(
                f"register: the table must be a catalog name (uc://, glue://, hms://), not {self.table_path!r}"
            )

    def needs_spark(self) -> bool:
        return False
