"""Operators that read what a Delta table is, for a DAG to branch on: DESCRIBE DETAIL and history.

They read ``_delta_log`` through the core, in the task's process, with no
Spark and no JVM (they have no ``engine`` argument: there is nothing for
Spark to do), and commit nothing. Their XCom value is the document the core
computes, the same as ``python -m airflow_delta_provider.delta``'s:

- :class:`DeltaDescribeOperator`: :func:`~airflow_delta_provider.delta.table_info.detail`;
- :class:`DeltaHistoryOperator`: :meth:`~airflow_delta_provider.delta.table.DeltaTable.history`.

Importing this module imports neither pyspark, pyarrow nor obstore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_delta_provider.hooks.delta_operation import task_error
from airflow_delta_provider.operations.spec.fields import number

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_delta_provider.delta.table import DeltaTable


class DeltaTableInfoOperator(BaseOperator):
    """Base of the operators that read a table's log and return what they found.

    :param table_path: The table's location: a path, or a ``file://``,
        ``s3://``, ``abfss://``/``az://`` or ``gs://`` URI; or its name in a
        catalog (``docs/catalogs.rst``). (templated)
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the store's credentials;
        None uses each cloud's own chain.
    :param catalog_conn_id: The catalog of a table named ``uc://``, ``glue://``
        or ``hms://`` (None: the environment's).
    """

    template_fields: Sequence[str] = ("table_path",)
    ui_color = "#c7eef8"

    def __init__(
        self, *, table_path: str, storage_conn_id: str | None = None, catalog_conn_id: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.table_path = table_path
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id

    def execute(self, context: Context) -> Any:
        from airflow_delta_provider.delta.errors import DeltaError
        from airflow_delta_provider.delta.table import DeltaTable
        from airflow_delta_provider.hooks.delta_catalog import resolve_for_reading
        from airflow_delta_provider.utils.storage_connection import storage_settings

        try:
            arguments = self._arguments()
        except ValueError as exc:  # a rendered argument of the wrong kind: no retry mends it
            raise AirflowFailException(f"{type(self).__name__}: {exc}") from None
        try:
            location, options = resolve_for_reading(
                self.table_path, storage_settings(self.storage_conn_id), self.catalog_conn_id
            )
            return self.read(DeltaTable(location, options or None), **arguments)
        except DeltaError as exc:
            error = task_error(exc, f"{type(self).__name__} of {self.table_path} failed: {type(exc).__name__}: {exc}")
            raise error from (None if isinstance(error, AirflowFailException) else exc)

    def _arguments(self) -> dict[str, Any]:
        """The rendered arguments of :meth:`read`, checked."""
        raise NotImplementedError

    def read(self, table: DeltaTable, **arguments: Any) -> Any:
        """What the task returns, read from ``table``."""
        raise NotImplementedError


class DeltaDescribeOperator(DeltaTableInfoOperator):
    """Return DESCRIBE DETAIL of a table version, with its schema and protocol.

    The XCom value has delta-spark's DESCRIBE DETAIL fields (``format``,
    ``id``, ``name``, ``description``, ``location``, ``createdAt``,
    ``lastModified``, ``partitionColumns``, ``clusteringColumns``,
    ``numFiles``, ``sizeInBytes``, ``properties``, ``minReaderVersion``,
    ``minWriterVersion``, ``tableFeatures``), plus ``version``, ``schema``
    (Delta schema JSON) and ``protocol`` (the protocol action). Times are
    milliseconds since the epoch.

    :param version: Describe this version (default: the latest). (templated)
    :param timestamp: Describe the newest version committed at or before this
        time (ISO 8601, UTC if no zone). (templated)
    """

    template_fields: Sequence[str] = (*DeltaTableInfoOperator.template_fields, "version", "timestamp")

    def __init__(self, *, version: int | str | None = None, timestamp: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if version is not None and timestamp is not None:
            raise ValueError("give a version or a timestamp, not both")
        self.version = version
        self.timestamp = timestamp

    def _arguments(self) -> dict[str, Any]:
        version = None if self.version in (None, "") else number(self.version, "version")
        return {"version": version, "timestamp": self.timestamp or None}

    def read(self, table: DeltaTable, **arguments: Any) -> dict[str, Any]:
        from airflow_delta_provider.delta.table_info import detail

        described = detail(table.snapshot(**arguments))
        self.log.info(
            "%s at version %s: %s files, %s bytes",
            described["location"],
            described["version"],
            described["numFiles"],
            described["sizeInBytes"],
        )
        return described


class DeltaHistoryOperator(DeltaTableInfoOperator):
    """Return the commits of a table, newest first: the last ``limit``, or a version range.

    The XCom value is a list of each commit's ``commitInfo`` (``timestamp``,
    ``operation``, ``operationParameters``, ``operationMetrics``, ...) with
    its ``version``, as delta-spark's DESCRIBE HISTORY shows them.

    :param limit: At most this many commits, the newest. (templated)
    :param start_version: Only commits from this version on. (templated)
    :param end_version: Only commits up to this version. (templated)
    """

    template_fields: Sequence[str] = (
        *DeltaTableInfoOperator.template_fields,
        "limit",
        "start_version",
        "end_version",
    )

    def __init__(
        self,
        *,
        limit: int | str | None = None,
        start_version: int | str | None = None,
        end_version: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.limit = limit
        self.start_version = start_version
        self.end_version = end_version

    def _arguments(self) -> dict[str, Any]:
        return {
            name: None if value in (None, "") else number(value, name)
            for name, value in (
                ("limit", self.limit),
                ("start_version", self.start_version),
                ("end_version", self.end_version),
            )
        }

    def read(self, table: DeltaTable, **arguments: Any) -> list[dict[str, Any]]:
        history = table.history(**arguments)
        self.log.info("%s commits of %s (%s)", len(history), self.table_path, arguments)
        return history
