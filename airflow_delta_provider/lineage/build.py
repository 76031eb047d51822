"""The OpenLineage of one operator or sensor run, read back from ``_delta_log``.

Before the run (``get_openlineage_facets_on_start``) only names are known,
and nothing is read. After it, the version the operator committed (its XCom
value) or the sensor saw is opened through the core for its schema, and a
commit's ``readVersion`` names the version that UPDATE, DELETE and REORG
read. A log that cannot be read costs the schema and the read version, not
the rest of the lineage.

Without ``apache-airflow-providers-openlineage`` both entry points return
None: the extractor that would call them is not there either, and a caller
that calls them anyway gets nothing instead of an ImportError.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from airflow_delta_provider.lineage.columns import ColumnLineage, Rewrite, identity_lineage, rewrite_lineage
from airflow_delta_provider.lineage.naming import DatasetName, dataset_name, needs_storage_options

log = logging.getLogger(__name__)

#: Returns a table's storage options; called only when they are needed.
StorageOptions = Callable[[], Mapping[str, str]]


def operator_lineage(
    table_path: str,
    result: Mapping[str, Any] | None,
    storage_options: StorageOptions,
    *,
    rewrite: Mapping[str, Any] | None = None,
    sources: Sequence[tuple[str, str]] = (),
    source_is_query: bool = False,
    source_has_table_columns: bool = False,
    joins_source: bool = False,
    catalog_name: DatasetName | None = None,
) -> Any:
    """An ``OperatorLineage`` for one Delta operator run, or None without OpenLineage.

    :param table_path: The table the operator changes: the output.
    :param result: The operator's XCom value; None before the run.
    :param storage_options: The table's (and the source's) storage options.
    :param rewrite: For UPDATE, DELETE and REORG, the :class:`.columns.Rewrite`
        fields: the table at the version read is then an input too.
    :param sources: The (path, format) of each source of APPEND or MERGE,
        inputs (``delta`` sources are read for their schema): the source path,
        or the views of a source query.
    :param source_is_query: The sources are a query's views: a column may come
        from any of them, computed, so no column lineage is given.
    :param source_has_table_columns: The table's columns are the source's
        (an overwrite that replaces the schema), so each comes from its namesake.
    :param joins_source: The source is joined to the table (MERGE): both are
        inputs, and a column may come from either, so no column lineage is given.
    :param catalog_name: The table's name in a catalog (``table_path`` is then
        its location): the output's ``symlinks`` facet.
    """
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage

        from airflow_delta_provider.lineage import facets
    except ImportError:  # the [openlineage] extra is not installed
        return None
    options = cache(storage_options)
    table = _name(table_path, options)
    version = None if result is None else result.get("version")
    schema, read_version = None, None
    if version is not None:
        schema, read_version = _read_table(table_path, options, version, read_version_too=rewrite is not None)

    inputs: list[Any] = []
    lineage: ColumnLineage | None = None
    lineage_source = table
    if rewrite is not None:
        inputs.append(facets.input_dataset(table, facets.table_facets(read_version, schema)))
        if schema is not None:
            lineage = rewrite_lineage(schema, Rewrite(**rewrite))
    for source, source_format in sources:
        lineage_source = _name(source, options)
        source_schema = _source_schema(source, options) if version is not None and source_format == "delta" else None
        source_facets = facets.table_facets(schema=source_schema) if source_format == "delta" else {}
        inputs.append(facets.input_dataset(lineage_source, source_facets))
        if schema is not None and not joins_source:
            lineage = _append_lineage(schema, source_schema, source_has_table_columns)
    if joins_source or source_is_query:
        lineage = None

    output_facets = facets.table_facets(version, schema)
    if catalog_name is not None:
        output_facets["symlinks"] = facets.symlinks_facet(catalog_name)
    if lineage is not None and lineage.fields:
        output_facets["columnLineage"] = facets.column_lineage_facet(lineage, lineage_source)
    statistics = facets.output_statistics(result.get("metrics") or {}) if version is not None else {}
    return OperatorLineage(inputs=inputs, outputs=[facets.output_dataset(table, output_facets, statistics)])


def sensor_lineage(table_path: str, version: int | None, storage_options: StorageOptions) -> Any:
    """An ``OperatorLineage`` with the watched table as the input, at ``version``
    once the sensor has seen it; None without OpenLineage."""
    return changes_lineage(table_path, None, version, storage_options)


def changes_lineage(table_path: str, output: str | None, version: int | None, storage_options: StorageOptions) -> Any:
    """An ``OperatorLineage`` that reads the table (at ``version``, once known)
    and writes the folder ``output`` when given (a table's changes written
    out); None without OpenLineage."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage

        from airflow_delta_provider.lineage import facets
    except ImportError:  # the [openlineage] extra is not installed
        return None
    options = cache(storage_options)
    schema = None if version is None else _read_table(table_path, options, version)[0]
    table = facets.input_dataset(_name(table_path, options), facets.table_facets(version, schema))
    outputs = [] if output is None else [facets.output_dataset(_name(output, options))]
    return OperatorLineage(inputs=[table], outputs=outputs)


def _name(path: str, options: StorageOptions) -> DatasetName:
    return dataset_name(path, options() if needs_storage_options(path) else None)


def _read_table(
    table_path: str, options: StorageOptions, version: int, *, read_version_too: bool = False
) -> tuple[dict[str, Any] | None, int | None]:
    """The schema at ``version``, and with ``read_version_too`` the ``readVersion`` of its commit.

    UPDATE, DELETE and REORG keep the schema, so the version read has the
    committed version's schema.
    """
    from airflow_delta_provider.delta.actions.model import CommitInfo, parse_commit
    from airflow_delta_provider.delta.errors import DeltaError
    from airflow_delta_provider.delta.table import DeltaTable

    try:
        table = DeltaTable(table_path, options() or None)
        schema = table.snapshot(version=version).schema
        if not read_version_too:
            return schema, None
        info = next((a for a in parse_commit(table.log_store.read_commit(version)) if isinstance(a, CommitInfo)), None)
    except (DeltaError, OSError) as exc:
        log.warning("OpenLineage: cannot read version %s of %s: %s", version, table_path, exc)
        return None, None
    read_version = None if info is None else info.raw.get("readVersion")
    return schema, read_version if isinstance(read_version, int) else None


def _source_schema(source: str, options: StorageOptions) -> dict[str, Any] | None:
    """A Delta source's latest schema (the version APPEND read is not recorded)."""
    from airflow_delta_provider.delta.errors import DeltaError
    from airflow_delta_provider.delta.table import DeltaTable

    try:
        return DeltaTable(source, options() or None).snapshot().schema
    except (DeltaError, OSError) as exc:
        log.warning("OpenLineage: cannot read the schema of source %s: %s", source, exc)
        return None


def _append_lineage(
    schema: Mapping[str, Any], source_schema: Mapping[str, Any] | None, source_has_table_columns: bool
) -> ColumnLineage | None:
    """APPEND copies each source column into its namesake. Without the
    source's schema, only an overwrite that replaced the schema says which
    columns those are."""
    from airflow_delta_provider.delta.schema.fields import column_names

    columns = column_names(schema)
    if source_has_table_columns:
        return identity_lineage(columns)
    if source_schema is None:
        return None
    in_source = {c.lower() for c in column_names(source_schema)}
    return identity_lineage(c for c in columns if c.lower() in in_source)
