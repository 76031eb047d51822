"""MERGE's arguments: the one declaration of its options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.merge.clauses import parse_clauses
from airflow_delta_provider.operations.sources.spec import SOURCE_FORMATS, check_source
from airflow_delta_provider.operations.spec.base import OperationSpec, Renamed
from airflow_delta_provider.operations.spec.fields import (
    option,
    pairs,
    switch,
)


@dataclass(frozen=True, kw_only=True)
class MergeSpec(OperationSpec):
    operation = "merge"
    summary = "MERGE (upsert) a source into the table"
    renamed: ClassVar[Mapping[str, Renamed]] = {**OperationSpec.renamed, "source_options": ("options", None)}

    source: str | None = option(templated=True, help="path of the source data (or give --source-sql)")
    source_format: str = option("parquet", choices=SOURCE_FORMATS)
    source_sql: str | None = option(
        templated=True, renderer="sql", metavar="SQL", help="a query whose rows are the source, over --source-views"
    )
    source_views: str | None = option(
        templated=True,
        renderer="json",
        json_text=True,
        metavar="JSON",
        help="the views --source-sql reads (as append's)",
    )
    on: str = option(templated=True, renderer="sql", required=True, help='join condition, e.g. "t.id = s.id"')
    clauses: str = option(
        templated=True,
        renderer="json",
        json_text=True,
        required=True,
        help='ordered WHEN clauses as JSON, e.g. [{"when": "matched", "update": "*"}, '
        '{"when": "not_matched", "insert": "*"}]',
    )
    target_alias: str = option("t")
    source_alias: str = option("s")
    source_version: int | None = option(
        templated=True, parse=int, help="version of a delta source (default: its latest)"
    )
    merge_schema: bool = switch(help="let * clauses add the source's new columns")
    options: tuple[tuple[str, str], ...] = pairs(
        templated=True, flag="--option", dest="option", help="source reader option"
    )

    def validate(self) -> None:
        super().validate()
        check_source(self.source, self.source_sql, self.source_views)
        if self.source_sql is not None and (self.source_version is not None or self.options):
            raise InvalidArgumentError(
                "merge: --source-version and --option describe a --source path; a query's views carry their own"
            )
        if self.source_version is not None and self.source_format != "delta":
            raise InvalidArgumentError(f"a source version needs a delta source, not {self.source_format}")
        if not self.on.strip():
            raise InvalidArgumentError("MERGE needs a join condition (on), e.g. t.id = s.id")
        if check_alias(self.target_alias, "target").lower() == check_alias(self.source_alias, "source").lower():
            raise InvalidArgumentError(f"the target and source aliases must differ, both are {self.target_alias!r}")
        parse_clauses(self.clauses)


def check_alias(alias: str, what: str) -> str:
    """An alias must be a plain SQL identifier (it is spliced into column references)."""
    if not alias or not alias.isascii() or not alias.replace("_", "a").isalnum() or alias[0].isdigit():
        raise InvalidArgumentError(f"the {what} alias {alias!r} must be a plain identifier (letters, digits, _)")
    return alias
