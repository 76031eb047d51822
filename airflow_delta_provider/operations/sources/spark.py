"""The rows APPEND and MERGE take in: files at a path, or a SQL query over views.

A path is read in its format, a Delta table through our own scan at an
optional version (:func:`read_source`). A query (``source_sql``) runs over
``source_views`` (:class:`~airflow_delta_provider.operations.sources.spec.SourceView`),
each read the same way and registered as a temporary view for the command
only: :class:`Source` drops the views it registered when its block ends, so
a session that runs several commands (a local session, a test suite) keeps
none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from types import TracebackType
from typing import Any, Protocol

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from airflow_delta_provider.delta.errors import InvalidInputError, first_line
from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.operations.sources.spec import SourceView, parse_source_views
from airflow_delta_provider.spark.conditions import analyse
from airflow_delta_provider.spark.read.scan import scan
from airflow_delta_provider.spark.runtime.io_mode import ARROW, resolve_io


def read_source(
    spark: SparkSession,
    source: str,
    format: str,
    options: Mapping[str, str],
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
) -> DataFrame:
    """The rows at ``source``; a Delta source is read through our own scan, at
    ``version`` (default: its latest).

    A source on an object store that ``io`` reads in ``arrow`` mode must be
    parquet (a file, or a flat folder of files) or Delta.
    """
    if format == "delta":
        return scan(spark, DeltaTable(source, storage_options).snapshot(version), io=io)
    try:
        location = parse_location(source)
    except InvalidInputError:
        location = None  # a scheme only Spark knows (hdfs://, ...): Spark reads it
    if location is not None and not location.is_local and resolve_io(spark, location, io) == ARROW:
        if format != "parquet":
            raise InvalidInputError(
                f"cannot read the {format} source {source} with io=arrow: arrow I/O reads parquet and "
                "delta sources on object stores; use io=hadoop with the store's connector on the cluster"
            )
        from airflow_delta_provider.spark.read.arrow_source import arrow_read_parquet

        return arrow_read_parquet(spark, location, storage_options)
    try:
        return spark.read.format(format).options(**dict(options)).load(source)
    except AnalysisException as exc:
        raise InvalidInputError(f"cannot read {format} source {source}: {first_line(exc)}") from None


class SourceArguments(Protocol):
    """The fields of a spec that reads a source (APPEND's, MERGE's)."""

    @property
    def source(self) -> str | None: ...
    @property
    def source_format(self) -> str | None: ...
    @property
    def options(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def source_sql(self) -> str | None: ...
    @property
    def source_views(self) -> str | None: ...
    @property
    def io(self) -> str: ...


class Source:
    """A command's source rows, read when first asked for (:meth:`frame`).

    Either ``path`` in ``format`` (with reader ``options``; a Delta table at
    ``version``), or the query ``sql`` over ``views`` (a sequence of
    :class:`SourceView`, or the mapping of ``source_views``, or its JSON text). Use it as a context manager:
    the query's views are dropped when the block ends.

    :param io: How a path (or a view) on an object store is read (``--io``).
    :param storage_options: The stores' settings for this process (a Delta
        path's log, an arrow read); None: the environment.
    """

    def __init__(
        self,
        spark: SparkSession,
        *,
        path: str | None = None,
        format: str | None = None,
        options: Mapping[str, str] | None = None,
        version: int | None = None,
        sql: str | None = None,
        views: Sequence[SourceView] | Mapping[str, Any] | str | None = None,
        io: str = "auto",
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.path, self.format, self.options, self.version = path, format or "parquet", dict(options or {}), version
        self.sql = sql
        try:
            self.views = (
                parse_source_views(views) if views is None or isinstance(views, (str, Mapping)) else tuple(views)
            )
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
        self.io, self.storage_options = io, storage_options
        self._frame: DataFrame | None = None
        self._registered: list[str] = []

    @classmethod
    def of(
        cls,
        spark: SparkSession,
        spec: SourceArguments,
        storage_options: Mapping[str, str] | None = None,
        version: int | None = None,
    ) -> Source:
        """The source ``spec`` names (its ``validate()`` checked it), a Delta path at ``version``."""
        return cls(
            spark, path=spec.source, format=spec.source_format, options=dict(spec.options), version=version,
            sql=spec.source_sql, views=spec.source_views, io=spec.io, storage_options=storage_options,
        )  # fmt: skip

    @property
    def is_snapshot(self) -> bool:
        """Whether every read gives the same rows: a Delta path at a version
        (a query may call anything, and files may change between reads)."""
        return self.path is not None and self.format == "delta"

    def describe(self) -> str:
        """The source, as an error message names it."""
        return f"the {self.format} source {self.path}" if self.path is not None else "the source_sql query"

    def frame(self) -> DataFrame:
        """The source rows (read, or the query analysed, on the first call)."""
        if self._frame is None:
            self._frame = self._read()
        return self._frame

    def _read(self) -> DataFrame:
        if self.path is not None:
            return read_source(
                self.spark, self.path, self.format, self.options, self.io, self.storage_options, self.version
            )
        assert self.sql is not None
        for view in self.views:
            rows = read_source(
                self.spark, view.path, view.format, dict(view.options), self.io, self.storage_options, view.version
            )
            rows.createOrReplaceTempView(view.name)
            self._registered.append(view.name)
        sql = self.sql

        def analysed() -> DataFrame:
            frame = self.spark.sql(sql)
            _ = frame.schema  # over Spark Connect the query is analysed only when asked
            return frame

        return analyse("source_sql", sql, analysed)

    def __enter__(self) -> Source:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Drop the views this source registered (a lost session has none left to drop)."""
        while self._registered:
            name = self._registered.pop()
            with suppress(Exception):  # a lost session: the command's own error is the one to report
                self.spark.catalog.dropTempView(name)


__all__ = ["Source", "SourceArguments", "read_source"]
