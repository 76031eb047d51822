"""APPEND's arguments: the one declaration of its options."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.sources.spec import SOURCE_FORMATS, check_source
from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed, catalog_location
from airflow_delta_provider.operations.spec.fields import (
    joined,
    option,
    pairs,
    repeated,
    switch,
)

#: Write modes of APPEND.
APPEND_MODES = ("append", "overwrite")
#: How an overwrite treats partitions (delta-spark's ``partitionOverwriteMode``): ``static``
#: replaces the whole table (or what ``replace_where`` matches), ``dynamic`` only the
#: partitions the source writes.
PARTITION_OVERWRITE_MODES = ("static", "dynamic")
STATIC_OVERWRITE, DYNAMIC_OVERWRITE = PARTITION_OVERWRITE_MODES


@dataclass(frozen=True, kw_only=True)
class AppendSpec(OperationSpec):
    operation = "append"
    summary = "append (or overwrite) rows from files, or from a SQL query"
    renamed: ClassVar[Mapping[str, Renamed]] = {**OperationSpec.renamed, "format": ("source_format", None)}
    creates_table = True

    source: str | None = option(templated=True, help="path of the data to append (or give --source-sql)")
    source_format: str | None = option(
        operator_default="parquet",
        flag="--format",
        choices=SOURCE_FORMATS,
        help="the source's format (required with --source)",
    )
    source_sql: str | None = option(
        templated=True, renderer="sql", metavar="SQL", help="a query whose rows to append, over --source-views"
    )
    source_views: str | None = option(
        templated=True,
        renderer="json",
        json_text=True,
        metavar="JSON",
        help='the views --source-sql reads, e.g. {"orders": {"path": "s3://b/orders", "format": "delta", '
        '"version": 3}, "fx": {"path": "/data/fx.csv", "format": "csv", "options": {"header": "true"}}}',
    )
    mode: str = option("append", choices=APPEND_MODES)
    table_schema: str | None = option(
        templated=True,
        json_text=True,
        metavar="JSON",
        help="Delta schema of a table this creates (or replaces with --overwrite-schema); its field metadata may "
        "declare generated (delta.generationExpression) and identity (delta.identity.*) columns",
    )
    merge_schema: bool = switch()
    overwrite_schema: bool = switch()
    replace_where: str | None = option(
        templated=True,
        renderer="sql",
        metavar="SQL",
        help="with --mode overwrite: replace only the rows this predicate matches, in one commit",
    )
    partition_overwrite_mode: str | None = option(
        templated=True,
        flag="--partition-overwrite",
        choices=PARTITION_OVERWRITE_MODES,
        help="with --mode overwrite: dynamic replaces only the partitions the source writes (default: static)",
    )
    partition_by: tuple[str, ...] = repeated(templated=True, metavar="COL")
    cluster_by: tuple[str, ...] = joined(
        templated=True,
        metavar="C1,C2",
        help="liquid clustering columns of a table this creates (never with --partition-by)",
    )
    txn_app_id: str | None = option(templated=True)
    txn_version: int | None = option(templated=True, parse=int)
    options: tuple[tuple[str, str], ...] = pairs(templated=True, flag="--option", dest="option")
    table_properties: tuple[tuple[str, str], ...] = pairs(
        templated=True, flag="--property", dest="property", help="table property (delta.*)"
    )
    user_metadata: str | None = option(
        templated=True,
        metavar="TEXT",
        help="text recorded in the commit's userMetadata (delta-spark's userMetadata write option)",
    )
    location: str | None = catalog_location()

    def idempotent_txn(self) -> tuple[str, int] | None:
        if self.txn_app_id is None or self.txn_version is None:
            return None
        return self.txn_app_id, self.txn_version

    def validate(self) -> None:
        super().validate()
        check_source(self.source, self.source_sql, self.source_views)
        if self.source is not None and self.source_format is None:
            raise InvalidArgumentError("append: give the source's format (--format) with --source")
        if self.source_sql is not None and (self.source_format is not None or self.options):
            raise InvalidArgumentError(
                "append: --format and --option describe a --source path; a query's views carry their own"
            )
        if self.cluster_by and self.partition_by:
            raise InvalidArgumentError(
                "append: a table is partitioned (--partition-by) or clustered (--cluster-by), not both"
            )
        if self.overwrite_schema and self.mode != "overwrite":
            raise InvalidArgumentError("overwrite_schema needs mode overwrite")
        if (self.txn_app_id is None) != (self.txn_version is None):
            raise InvalidArgumentError("give both the txn app id and the txn version, or neither")
        if self.txn_version is not None and self.txn_version < 0:
            raise InvalidArgumentError(f"txn version must not be negative, got {self.txn_version}")
        self._check_selective_overwrite()
        if self.replace_where is not None and not self.replace_where.strip():
            raise InvalidArgumentError("replace_where is empty; omit it to overwrite the whole table")
        parse_table_schema(self.table_schema)

    def _check_selective_overwrite(self) -> None:
        """Refuse the combinations delta-spark refuses, and a selective overwrite
        that is not an overwrite."""
        dynamic = self.partition_overwrite_mode == DYNAMIC_OVERWRITE
        if self.replace_where is None and not dynamic:
            return
        if self.replace_where is not None and dynamic:
            raise InvalidArgumentError('replace_where and partition_overwrite_mode="dynamic" cannot both be set')
        what = "replace_where" if self.replace_where is not None else 'partition_overwrite_mode="dynamic"'
        if self.mode != "overwrite":
            raise InvalidArgumentError(
                f'{what} replaces part of the table: it needs mode="overwrite", not {self.mode!r}'
            )
        if self.overwrite_schema:
            raise InvalidArgumentError(f"{what} cannot be used with overwrite_schema: the schema stays the table's")


def parse_table_schema(text: str | None) -> dict[str, Any] | None:
    """The declared Delta schema ``text`` holds, as JSON, when it has a schema's
    shape: a struct with a list of fields (the runner checks the fields' types)."""
    if text is None:
        return None
    try:
        schema = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"the table schema is not JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
        raise InvalidArgumentError('the table schema must be a Delta schema: {"type": "struct", "fields": [...]}')
    return schema
