"""Operators that change a Delta table, each as one Spark application.

They are thin: each turns its arguments into its request (one frozen
dataclass per operation, :mod:`airflow_delta_provider.requests`), whose argv
the Spark application parses back into the same request; a hook runs it:

- :class:`~airflow_delta_provider.hooks.delta_spark.DeltaSparkHook`, one
  spark-submit, when ``conn_id`` is a ``spark`` connection (the default);
- :class:`~airflow_delta_provider.hooks.delta_in_process.DeltaInProcessHook`,
  in the task's process, when ``conn_id`` is a ``spark_connect`` connection
  (Spark Connect), or with ``engine="python"`` (no Spark: CHECKPOINT,
  VACUUM, ALTER, RESTORE, CONVERT, GENERATE, CLONE).

Every operator returns ``{table, version, operation, metrics}`` as its
XCom value (``version`` is None when nothing changed) and pushes the version
alone under the key ``version``. An operator that commits declares an asset
alias for its table among its outlets, and after a commit emits an event on
the table's asset whose ``extra`` is that result
(:mod:`airflow_delta_provider.assets.events`).

Importing this module imports neither pyspark, pyarrow nor OpenLineage; the
OpenLineage methods import :mod:`airflow_delta_provider.lineage` when called.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseHook, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_delta_provider.assets.events import emit_commit_event, table_alias
from airflow_delta_provider.hooks.delta_in_process import SPARK_CONNECT_CONN_TYPE, DeltaInProcessHook
from airflow_delta_provider.hooks.delta_operation import DeltaOperationResult, operation_token
from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook
from airflow_delta_provider.operations.alter.changes import ALTER_CHANGES
from airflow_delta_provider.operations.alter.spec import REWRITING_DROPS, AlterSpec
from airflow_delta_provider.operations.append.spec import (
    APPEND_MODES,
    DYNAMIC_OVERWRITE,
    PARTITION_OVERWRITE_MODES,
    STATIC_OVERWRITE,
    AppendSpec,
)
from airflow_delta_provider.operations.changes.spec import CHANGES_OUTPUT_FORMATS, ChangesSpec
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.generate.spec import GENERATE_MODES, GenerateSpec
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.sources.spec import SOURCE_FORMATS, parse_source_views, views_json
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.operations.vacuum.spec import VACUUM_MODES, VacuumSpec
from airflow_delta_provider.operators.rendered import number as _number
from airflow_delta_provider.spark.runtime.io_modes import IO_MODES

if TYPE_CHECKING:
    from airflow.sdk import Context

#: XCom key under which each operator pushes the committed version.
VERSION_XCOM_KEY = "version"
#: Values of ``engine``: Spark (spark-submit or Spark Connect, by the connection), or none.
ENGINES = ("spark", "python")
#: Arguments that size or shape a spark-submit, and mean nothing over Spark Connect.
_SPARK_SUBMIT_ONLY = (
    "env_vars",
    "executor_cores",
    "executor_memory",
    "driver_memory",
    "num_executors",
    "total_executor_cores",
    "deploy_mode",
    "spark_binary",
    "name",
)


class DeltaSparkOperator(BaseOperator):
    """Base of the Delta operators: one operation, one Spark application, one commit.

    :param table_path: The table's location, as the Spark driver sees it: a
        path, or a ``file://``, ``s3://`` (``s3a://``, ``s3n://``),
        ``abfss://`` (``abfs://``, ``az://``, ``azure://``) or ``gs://``
        (``gcs://``) URI. (templated)
    :param conn_id: The Spark connection (default ``spark_default``): a
        ``spark`` connection runs one spark-submit; a ``spark_connect``
        connection (``sc://host:port``) runs the operation in the task's
        process as a Spark Connect client, with no JVM of its own.
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the store's credentials;
        None uses each cloud's own chain. Secrets travel by environment only.
    :param io: How Spark reads and writes data files: ``hadoop`` (Spark's own
        filesystem and the cluster's connector), ``arrow`` (pyarrow on the
        executors, no connector jar needed) or ``auto`` (``hadoop`` when
        Spark has a filesystem for the scheme).
    :param conf: Spark configuration properties. (templated)
    :param env_vars: Environment variables for spark-submit. (templated)
    :param executor_cores: Cores per executor.
    :param executor_memory: Memory per executor, e.g. ``2g``.
    :param driver_memory: Memory of the driver, e.g. ``1g``.
    :param num_executors: Number of executors (YARN, Kubernetes).
    :param total_executor_cores: Total cores of the application (standalone).
    :param deploy_mode: ``client`` or ``cluster``; overrides the connection.
    :param spark_binary: The spark-submit command; overrides the connection.
    :param name: The Spark application name (default ``delta-<operation>: <table>``). (templated)
    :param hook_params: Any other :class:`SparkSubmitHook` argument
        (``py_files``, ``jars``, ``keytab``, ``verbose``, ...).
    :param debug: Log everything: Spark's INFO output, the spark-submit
        command, and on failure its output and PySpark's records of Spark
        errors with their JVM stacks. By default the task log shows the
        operation's own lines and Spark's warnings, and a failure is one line.
    :param engine: ``spark`` (default), or ``python`` for the operations that
        need no Spark (CHECKPOINT, VACUUM, ALTER, RESTORE, CONVERT, GENERATE, CLONE): the core does them in the
        task's process, with no JVM, in a fraction of a second
        (``docs/execution-modes.rst`` says when Spark pays off for VACUUM).

    Over Spark Connect, ``conf`` holds runtime settings of the session (the
    server refuses static ones by name); the spark-submit sizing arguments
    (``executor_memory``, ``env_vars``, ...) are ignored with a warning.
    """

    #: The request this operator builds (one frozen dataclass per operation).
    request_class: ClassVar[type[OperationSpec]]
    #: The Spark CLI command this operator runs: its request's operation.
    operation: ClassVar[str]
    #: Whether a run commits a table version (and then emits an asset event for the table).
    commits_versions: ClassVar[bool] = True

    template_fields: Sequence[str] = ("table_path", "conf", "env_vars", "name")
    template_fields_renderers: ClassVar[dict[str, str]] = {"conf": "json", "env_vars": "json"}
    ui_color = "#9fe3f5"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "request_class" in cls.__dict__:
            cls.operation = cls.request_class.operation

    def __init__(
        self,
        *,
        table_path: str,
        conn_id: str = DeltaSparkHook.default_conn_name,
        storage_conn_id: str | None = None,
        io: str = "auto",
        conf: dict[str, Any] | None = None,
        env_vars: dict[str, Any] | None = None,
        executor_cores: int | None = None,
        executor_memory: str | None = None,
        driver_memory: str | None = None,
        num_executors: int | None = None,
        total_executor_cores: int | None = None,
        deploy_mode: str | None = None,
        spark_binary: str | None = None,
        name: str | None = None,
        hook_params: Mapping[str, Any] | None = None,
        debug: bool = False,
        engine: str = "spark",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if io not in IO_MODES:
            raise ValueError(f"io must be one of {IO_MODES}, not {io!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if engine == "python" and getattr(self, "operation", None) not in PYTHON_ENGINE_OPERATIONS:
            raise ValueError(
                f"engine='python' runs only {', '.join(PYTHON_ENGINE_OPERATIONS)}; {self.operation} needs Spark"
            )
        self.table_path = table_path
        self.conn_id = conn_id
        self.storage_conn_id = storage_conn_id
        self.io = io
        self.conf = conf
        self.env_vars = env_vars
        self.executor_cores = executor_cores
        self.executor_memory = executor_memory
        self.driver_memory = driver_memory
        self.num_executors = num_executors
        self.total_executor_cores = total_executor_cores
        self.deploy_mode = deploy_mode
        self.spark_binary = spark_binary
        self.name = name
        self.hook_params = dict(hook_params or {})
        self.debug = debug
        self.engine = engine
        # Named after the path as written: the alias is declared before templates are rendered.
        self._table_alias = table_alias(table_path) if self.commits_versions else None
        if self._table_alias is not None:
            self.outlets = [*self.outlets, self._table_alias]
        # The last run's result, for get_openlineage_facets_on_complete.
        self._committed: DeltaOperationResult | None = None

    def request(self, token: str | None = None) -> OperationSpec:
        """The request of this task, from its (rendered) arguments; ``token`` names its change."""
        return self.request_class(
            table_path=self.table_path, io=self.io, debug=self.debug, token=token, **self._request_fields()
        )

    def _request_fields(self) -> dict[str, Any]:
        """The operation's own fields of the request, from the operator's arguments."""
        raise NotImplementedError

    def cli_arguments(self) -> list[str]:
        """The Spark CLI's options for this operation (after the table path)."""
        return self.request().operation_arguments()

    @cached_property
    def hook(self) -> DeltaSparkHook | DeltaInProcessHook:
        """The hook, built once per try from the rendered arguments: in-process
        for ``engine="python"`` and ``spark_connect`` connections, else spark-submit."""
        if self.engine == "python":
            return DeltaInProcessHook(None, storage_conn_id=self.storage_conn_id)
        if self._conn_type() == SPARK_CONNECT_CONN_TYPE:
            ignored = sorted(a for a in _SPARK_SUBMIT_ONLY if getattr(self, a) is not None)
            if ignored or self.hook_params:
                self.log.warning(
                    "Over Spark Connect, these spark-submit arguments are ignored: %s",
                    ", ".join([*ignored, *sorted(self.hook_params)]),
                )
            return DeltaInProcessHook(self.conn_id, storage_conn_id=self.storage_conn_id, conf=self.conf)
        return DeltaSparkHook(
            conn_id=self.conn_id,
            storage_conn_id=self.storage_conn_id,
            conf=dict(self.conf or {}),
            env_vars=self.env_vars,
            executor_cores=self.executor_cores,
            executor_memory=self.executor_memory,
            driver_memory=self.driver_memory,
            num_executors=self.num_executors,
            total_executor_cores=self.total_executor_cores,
            deploy_mode=self.deploy_mode,
            spark_binary=self.spark_binary,
            name=self.name,
            **self.hook_params,
        )

    def _conn_type(self) -> str | None:
        """The type of ``conn_id``; None when it is not defined (SparkSubmitHook then uses its defaults)."""
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            return BaseHook.get_connection(self.conn_id).conn_type
        except AirflowNotFoundException:
            return None

    def execute(self, context: Context) -> DeltaOperationResult:
        ti = context["ti"]
        token = operation_token(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
        dag_run = context.get("dag_run")
        try:
            request = self.request(token)
        except ValueError as exc:  # a rendered argument of the wrong kind: no retry mends it
            raise AirflowFailException(f"{type(self).__name__}: {exc}") from None
        # The hook runs [operation, table, *arguments, "--token", token]: request.to_argv().
        result = self.hook.run(
            request.operation,
            request.table_path,
            request.arguments(),
            token=request.token,
            not_before=getattr(dag_run, "start_date", None),
        )
        if result["version"] is None:  # a dry run, nothing to do, or a read: what it found still counts
            self.log.info("%s committed no version of %s: %s", result["operation"], result["table"], result["metrics"])
        else:
            self.log.info(
                "%s: version %s of %s, %s",
                result["operation"],
                result["version"],
                result["table"],
                result["metrics"],
            )
        ti.xcom_push(key=VERSION_XCOM_KEY, value=result["version"])
        if self._table_alias is not None:
            self._emit_asset_event(context, self._table_alias, result)
        self._committed = result
        return result

    def _emit_asset_event(self, context: Context, alias: Any, result: DeltaOperationResult) -> None:
        """After a commit, an event on the table's asset with the result as its ``extra``."""
        from airflow_delta_provider.lineage.naming import needs_storage_options

        options = self.hook.storage_options if needs_storage_options(self.table_path) else None
        uri = emit_commit_event(context.get("outlet_events"), alias, self.table_path, result, options)
        if uri is not None:
            self.log.info("Asset event for %s: version %s", uri, result["version"])

    def on_kill(self) -> None:
        if "hook" in self.__dict__:
            self.hook.on_kill()

    # --- OpenLineage (docs/lineage.rst); None without the [openlineage] extra ---

    def get_openlineage_facets_on_start(self) -> Any:
        """The table as the output and the operation's inputs, by name only."""
        return self._openlineage(None)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The same datasets at the committed version, with schema, statistics and column lineage."""
        return self._openlineage(self._committed)

    def _openlineage(self, result: DeltaOperationResult | None) -> Any:
        from airflow_delta_provider.lineage.build import operator_lineage  # imports no OpenLineage itself

        return operator_lineage(self.table_path, result, lambda: self.hook.storage_options, **self._lineage_arguments())

    def _lineage_arguments(self) -> dict[str, Any]:
        """What :func:`~airflow_delta_provider.lineage.build.operator_lineage` needs beyond the table."""
        return {}


class DeltaUpdateOperator(DeltaSparkOperator):
    """Update the rows that match a condition: ``UPDATE t SET c = expr WHERE cond``.

    :param updates: Column name -> SQL expression of its new value, e.g.
        ``{"status": "'late'", "amount": "amount * 2"}``. (templated)
    :param condition: SQL condition; all rows when None. (templated)
    """

    request_class = UpdateSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "updates", "condition")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "condition": "sql",
        "updates": "json",
    }

    def __init__(self, *, updates: Mapping[str, str], condition: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not updates:
            raise ValueError("DeltaUpdateOperator needs at least one column in updates")
        self.updates = dict(updates)
        self.condition = condition

    def _request_fields(self) -> dict[str, Any]:
        return {"condition": self.condition, "updates": _pairs(self.updates)}

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {"assignments": self.updates, "condition": self.condition}}


class DeltaDeleteOperator(DeltaSparkOperator):
    """Delete the rows that match a condition: ``DELETE FROM t WHERE cond``.

    :param condition: SQL condition; all rows when None. (templated)
    """

    request_class = DeleteSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "condition")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "condition": "sql",
    }

    def __init__(self, *, condition: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.condition = condition

    def _request_fields(self) -> dict[str, Any]:
        return {"condition": self.condition}

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {"condition": self.condition, "deletes": True}}


class DeltaAppendOperator(DeltaSparkOperator):
    """Append (or overwrite with) the rows of a source, creating the table if needed.

    The table schema is enforced unless ``merge_schema`` lets new columns in.
    The source is a path (``source``), or a SQL query (``source_sql``) over
    the ``source_views`` it names::

        source_sql="SELECT o.*, c.region FROM orders o JOIN customers c USING (customer_id) "
        "WHERE o.ds = '{{ ds }}'",
        source_views={"orders": {"path": "s3://raw/orders", "format": "delta", "version": 12},
                      "customers": {"path": "s3://raw/customers.csv", "format": "csv",
                                    "options": {"header": "true"}}},

    :param source: Path of the data to write. (templated)
    :param source_format: ``parquet``, ``csv``, ``json``, ``orc`` or ``delta``.
    :param source_sql: Instead of ``source``: a Spark SQL query whose rows to
        write. It reads the ``source_views``, which exist for this query only. (templated)
    :param source_views: The query's views: a mapping from a view name to
        ``{"path", "format", "version"?, "options"?}``, the format one of
        ``parquet``, ``csv``, ``json``, ``orc`` or ``delta`` (read through our
        own scan, at ``version`` if given). (templated)
    :param merge_schema: Add the source's new columns to the table schema.
    :param partition_by: Partition columns, for a table this creates. (templated)
    :param cluster_by: Liquid clustering columns, for a table this creates
        (or replaces with ``overwrite_schema``): a list or one comma-separated
        string, at most four integral, decimal, date or timestamp columns with
        statistics; never with ``partition_by``. OPTIMIZE then clusters the
        files by them. (templated)
    :param mode: ``append`` or ``overwrite``.
    :param overwrite_schema: With ``mode="overwrite"``, replace the schema too.
    :param txn_app_id: With ``txn_version``, the protocol's idempotent-write
        marker: a write whose (app id, version) the table has seen is skipped. (templated)
    :param txn_version: See ``txn_app_id``: an integer, or a template that
        renders one, e.g. ``"{{ logical_date.strftime('%Y%m%d') }}"``. (templated)
    :param options: Reader options for the source, e.g. ``{"header": "true"}``. (templated)
    :param table_properties: Delta table properties to set in the same commit,
        e.g. ``{"delta.enableDeletionVectors": "true"}`` (which upgrades the
        table's protocol, as delta-spark does). (templated)
    :param table_schema: The Delta schema (a dict or its JSON text) of a
        table this creates, or replaces with ``overwrite_schema``, instead of
        the source's. Its field metadata may declare generated columns
        (``delta.generationExpression``) and identity columns
        (``delta.identity.start``, ``delta.identity.step``,
        ``delta.identity.allowExplicitInsert``); the source may leave those out. (templated)
    :param replace_where: With ``mode="overwrite"``: replace only the rows
        this SQL predicate matches, with the source's rows, in one commit (an
        idempotent reload of an interval: ``"ds = '{{ ds }}'"``). Every
        source row must match it. (templated)
    :param partition_overwrite_mode: With ``mode="overwrite"``: ``static``
        (default) replaces the whole table, ``dynamic`` only the partitions
        the source's rows fall in. (templated)
    """

    request_class = AppendSpec
    template_fields: Sequence[str] = (
        *DeltaSparkOperator.template_fields,
        "source",
        "source_sql",
        "source_views",
        "partition_by",
        "cluster_by",
        "txn_app_id",
        "txn_version",
        "options",
        "table_properties",
        "table_schema",
        "replace_where",
        "partition_overwrite_mode",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "source_sql": "sql",
        "source_views": "json",
        "replace_where": "sql",
    }
    _MODES = APPEND_MODES

    def __init__(
        self,
        *,
        source: str | None = None,
        source_format: str = "parquet",
        source_sql: str | None = None,
        source_views: Mapping[str, Any] | str | None = None,
        merge_schema: bool = False,
        partition_by: Sequence[str] | None = None,
        cluster_by: Sequence[str] | str | None = None,
        mode: str = "append",
        overwrite_schema: bool = False,
        txn_app_id: str | None = None,
        txn_version: int | None = None,
        options: Mapping[str, str] | None = None,
        table_properties: Mapping[str, str] | None = None,
        table_schema: Mapping[str, Any] | str | None = None,
        replace_where: str | None = None,
        partition_overwrite_mode: str = STATIC_OVERWRITE,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_source(self, source, source_format, source_sql, source_views)
        if mode not in self._MODES:
            raise ValueError(f"mode must be one of {self._MODES}, not {mode!r}")
        self.replace_where = replace_where
        self.partition_overwrite_mode = partition_overwrite_mode
        self._check_overwrite(mode, overwrite_schema)
        if (txn_app_id is None) != (txn_version is None):
            raise ValueError("txn_app_id and txn_version go together")
        self.source = source
        self.source_format = source_format
        self.source_sql = source_sql
        self.source_views = source_views
        self.merge_schema = merge_schema
        self.partition_by = list(partition_by or [])
        self.cluster_by = cluster_by  # a list, or one string of comma-separated names (templates render strings)
        if self.partition_by and _column_names(cluster_by):
            raise ValueError("a table is partitioned (partition_by) or clustered (cluster_by), not both")
        self.mode = mode
        self.overwrite_schema = overwrite_schema
        self.txn_app_id = txn_app_id
        self.txn_version = txn_version
        self.options = dict(options or {})
        self.table_properties = dict(table_properties or {})
        self.table_schema = (
            table_schema if table_schema is None or isinstance(table_schema, str) else dict(table_schema)
        )

    def _request_fields(self) -> dict[str, Any]:
        schema = self.table_schema
        return {
            "source": self.source,
            "source_format": self.source_format if self.source is not None else None,
            "source_sql": self.source_sql,
            "source_views": views_json(self.source_views),
            "mode": self.mode,
            "table_schema": schema if schema is None or isinstance(schema, str) else json.dumps(schema),
            "merge_schema": bool(self.merge_schema),
            "overwrite_schema": bool(self.overwrite_schema),
            "partition_by": tuple(str(column) for column in self.partition_by),
            "cluster_by": _column_names(self.cluster_by),
            "txn_app_id": self.txn_app_id,
            "txn_version": _number(self.txn_version, "txn_version"),
            "replace_where": self.replace_where,
            "partition_overwrite_mode": None
            if self.partition_overwrite_mode == STATIC_OVERWRITE
            else self.partition_overwrite_mode,
            "options": _pairs(self.options),
            "table_properties": _pairs(self.table_properties),
        }

    def _check_overwrite(self, mode: str, overwrite_schema: bool) -> None:
        """The selective-overwrite rules, when the DAG is parsed (a template is checked once rendered)."""
        from airflow_delta_provider.delta.errors import InvalidInputError
        from airflow_delta_provider.operations.append.plan import check_overwrite_arguments

        overwrite_mode = self.partition_overwrite_mode
        if "{{" in overwrite_mode:
            return
        if overwrite_mode not in PARTITION_OVERWRITE_MODES:
            raise ValueError(
                f"partition_overwrite_mode must be one of {PARTITION_OVERWRITE_MODES}, not {overwrite_mode!r}"
            )
        try:
            check_overwrite_arguments(mode, self.replace_where, overwrite_mode == DYNAMIC_OVERWRITE, overwrite_schema)
        except InvalidInputError as exc:
            raise ValueError(f"DeltaAppendOperator: {exc}") from None

    def _lineage_arguments(self) -> dict[str, Any]:
        return {
            "sources": _lineage_sources(self.source, self.source_format, self.source_views),
            "source_is_query": self.source_sql is not None,
            "source_has_table_columns": self.mode == "overwrite" and self.overwrite_schema,
        }


class DeltaMergeOperator(DeltaSparkOperator):
    """Upsert a source into the table, as delta-spark's ``MERGE INTO`` does.

    ``clauses`` is the ordered list of WHEN clauses (``docs/merge.rst``); for
    each row the first clause of its kind whose condition holds acts::

        [{"when": "matched", "condition": "s.op = 'D'", "delete": True},
         {"when": "matched", "update": "*"},
         {"when": "not_matched", "insert": "*"}]

    Only the files holding matched rows are rewritten; an insert-only MERGE
    rewrites nothing. A target row matched by two source rows fails the task
    naming its key (unless every matched clause deletes), and nothing is
    committed. With nothing to change, ``version`` is None.

    :param source: Path of the source data, or of a Delta table. (templated)
    :param source_sql: Instead of ``source``: a Spark SQL query whose rows
        are the source, over ``source_views`` (as :class:`DeltaAppendOperator`'s). (templated)
    :param source_views: The query's views, as :class:`DeltaAppendOperator`'s. (templated)
    :param on: The join condition, e.g. ``t.id = s.id``. (templated)
    :param clauses: The WHEN clauses, as a list of dicts or their JSON text. (templated)
    :param source_format: ``parquet``, ``csv``, ``json``, ``orc`` or ``delta``.
    :param source_version: For a Delta source, the version to read (default:
        its latest), e.g. the one an upstream task pushed. (templated)
    :param target_alias: How ``on`` and the clauses name the table (default ``t``).
    :param source_alias: How they name the source (default ``s``).
    :param merge_schema: Let ``*`` clauses add the source's new columns to the table.
    :param options: Reader options for the source, e.g. ``{"header": "true"}``. (templated)
    """

    request_class = MergeSpec
    template_fields: Sequence[str] = (
        *DeltaSparkOperator.template_fields,
        "source",
        "source_sql",
        "source_views",
        "on",
        "clauses",
        "source_version",
        "options",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "source_sql": "sql",
        "source_views": "json",
        "on": "sql",
        "clauses": "json",
    }

    def __init__(
        self,
        *,
        on: str,
        clauses: Sequence[Mapping[str, Any]] | str,
        source: str | None = None,
        source_format: str = "parquet",
        source_sql: str | None = None,
        source_views: Mapping[str, Any] | str | None = None,
        source_version: int | str | None = None,
        target_alias: str = "t",
        source_alias: str = "s",
        merge_schema: bool = False,
        options: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_source(self, source, source_format, source_sql, source_views)
        if source_sql is not None and (source_version is not None or options):
            raise ValueError("source_version and options describe a source path; a query's views carry their own")
        if source_version is not None and source_format != "delta":
            raise ValueError("source_version needs source_format='delta'")
        if not isinstance(clauses, str) or "{{" not in clauses:  # a template is checked once rendered
            from airflow_delta_provider.delta.errors import InvalidInputError
            from airflow_delta_provider.operations.merge.clauses import parse_clauses

            try:
                parse_clauses(clauses)
            except InvalidInputError as exc:
                raise ValueError(f"DeltaMergeOperator: {exc}") from None
        self.source = source
        self.source_sql = source_sql
        self.source_views = source_views
        self.on = on
        self.clauses = clauses
        self.source_format = source_format
        self.source_version = source_version
        self.target_alias = target_alias
        self.source_alias = source_alias
        self.merge_schema = merge_schema
        self.options = dict(options or {})

    def _request_fields(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "source_format": self.source_format,
            "source_sql": self.source_sql,
            "source_views": views_json(self.source_views),
            "on": self.on,
            "clauses": self.clauses if isinstance(self.clauses, str) else json.dumps(list(self.clauses)),
            "target_alias": self.target_alias,
            "source_alias": self.source_alias,
            "source_version": None if self.source_version == "" else _number(self.source_version, "source_version"),
            "merge_schema": bool(self.merge_schema),
            "options": _pairs(self.options),
        }

    def _lineage_arguments(self) -> dict[str, Any]:
        sources = _lineage_sources(self.source, self.source_format, self.source_views)
        return {"rewrite": {}, "sources": sources, "joins_source": True}


class DeltaCheckpointOperator(DeltaSparkOperator):
    """Write a checkpoint of the table's latest version.

    A checkpoint commits nothing: ``version`` is the checkpointed version.

    :param cleanup_logs: Also delete commits and checkpoints older than the
        table's log retention (``delta.logRetentionDuration``).
    """

    request_class = CheckpointSpec
    commits_versions = False

    def __init__(self, *, cleanup_logs: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cleanup_logs = cleanup_logs

    def _request_fields(self) -> dict[str, Any]:
        return {"cleanup_logs": bool(self.cleanup_logs)}


class DeltaVacuumOperator(DeltaSparkOperator):
    """Delete data files the table no longer references, older than the retention.

    :param retention_hours: Keep files removed less than this many hours ago
        (default: the table's ``delta.deletedFileRetentionDuration``, 7 days). (templated)
    :param dry_run: Only count the files that would go; commits nothing.
    :param retention_check: Refuse a retention below the table's minimum
        (delta-spark's ``retentionDurationCheck``).
    :param mode: ``"full"`` (default) lists the table folder, and also deletes
        files the log never named; ``"lite"`` finds the removable files from the
        log's ``remove`` actions since the last vacuum and lists no data folder
        (delta-spark's ``VACUUM LITE``). LITE is refused when log cleanup has
        removed the commits it needs: run a full VACUUM then.
    """

    request_class = VacuumSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "retention_hours")

    def __init__(
        self,
        *,
        retention_hours: float | str | None = None,
        dry_run: bool = False,
        retention_check: bool = True,
        mode: str = "full",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in VACUUM_MODES:
            raise ValueError(f"mode must be one of {VACUUM_MODES}, not {mode!r}")
        self.retention_hours = retention_hours
        self.dry_run = dry_run
        self.retention_check = retention_check
        self.mode = mode

    def _request_fields(self) -> dict[str, Any]:
        return {
            "retention_hours": _number(self.retention_hours, "retention_hours", float),
            "dry_run": bool(self.dry_run),
            "retention_check": bool(self.retention_check),
            "mode": self.mode,
        }


def _pairs(mapping: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A mapping as the request's ``K=V`` pairs (values as their text)."""
    return tuple((str(key), str(value)) for key, value in mapping.items())


def _check_source(
    operator: DeltaSparkOperator,
    source: str | None,
    source_format: str,
    source_sql: str | None,
    source_views: Mapping[str, Any] | str | None,
) -> None:
    """A source path or a query, with views whose description holds (a template is checked once rendered)."""
    if source_format not in SOURCE_FORMATS:
        raise ValueError(f"source_format must be one of {SOURCE_FORMATS}, not {source_format!r}")
    if (source is None) == (source_sql is None):
        raise ValueError(f"{type(operator).__name__} needs a source path (source) or a query (source_sql), exactly one")
    if source_views is not None and source_sql is None:
        raise ValueError("source_views name the views of source_sql: give source_sql too")
    if source_views is not None and "{{" not in str(source_views):
        try:
            parse_source_views(source_views)
        except ValueError as exc:
            raise ValueError(f"{type(operator).__name__}: {exc}") from None


def _lineage_sources(
    source: str | None, source_format: str, views: Mapping[str, Any] | str | None
) -> list[tuple[str, str]]:
    """The (path, format) of each place the source's rows are read from."""
    if source is not None:
        return [(source, source_format)]
    try:
        return [(view.path, view.format) for view in parse_source_views(views)]
    except ValueError:  # the task fails on it; lineage has nothing to say
        return []


def _check_unless_templated(operator: DeltaSparkOperator, value: Any) -> None:
    """Build the request now, so a bad ``value`` fails when the DAG is parsed;
    a template is checked once rendered, when the task runs."""
    if not (isinstance(value, str) and "{{" in value):
        operator.request()


def _range_bounds(value: Any) -> tuple[Any, Any] | None:
    """``(start_version, end_version)`` of a rendered ``version_range``; None when it is empty.

    It is a mapping (an ``XComArg``'s value), or the text a template rendered
    from one (a JSON object or a Python literal); None, ``""`` and ``"None"``
    are the empty range."""
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "None", "null"):
            return None
        import ast

        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ValueError(f"version_range must be a mapping or None, not {text!r}") from None
    if value is None:
        return None
    if not isinstance(value, Mapping) or "start_version" not in value or "end_version" not in value:
        raise ValueError(f"version_range must be a mapping with start_version and end_version, not {value!r}")
    return value["start_version"], value["end_version"]


class DeltaPurgeDeletionVectorsOperator(DeltaSparkOperator):
    """Rewrite the files whose deletion vectors hide rows, as delta-spark's
    ``REORG TABLE ... APPLY (PURGE)`` does: the deleted rows leave the data
    files; and, like it, the files that hold a column the schema does not
    name (a dropped column's values). The commit changes no row
    (``dataChange=false``).

    :param min_deleted_ratio: Only rewrite files whose vector hides more than
        this share of their rows (default 0: every file with a vector). (templated)
    """

    request_class = ReorgSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "min_deleted_ratio")

    def __init__(self, *, min_deleted_ratio: float | str = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.min_deleted_ratio = min_deleted_ratio
        _check_unless_templated(self, min_deleted_ratio)

    def _request_fields(self) -> dict[str, Any]:
        return {"min_deleted_ratio": _number(self.min_deleted_ratio, "min_deleted_ratio", float)}

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {}}  # the same rows, rewritten


class DeltaChangesOperator(DeltaSparkOperator):
    """Write the change data feed of a version range to a folder.

    Needs ``delta.enableChangeDataFeed`` on the table for every version of
    the range. Each written row has the table's columns, ``_change_type``
    (``insert``, ``delete``, ``update_preimage``, ``update_postimage``),
    ``_commit_version`` and ``_commit_timestamp``; the folder is replaced,
    so a retry writes the same output. Nothing is committed.

    The XCom value has the usual shape, with ``version`` the last version
    read (the next run starts after it) and ``metrics["changes"]`` the rows
    per change type, e.g. ``{"insert": 3, "delete": 1, "update_preimage": 2,
    "update_postimage": 2}``.

    :param start_version: The first version whose changes to read. (templated)
    :param end_version: The last one; default the latest. (templated)
    :param version_range: Instead of ``start_version`` and ``end_version``:
        the range :func:`~airflow_delta_provider.assets.version_range`
        returns, usually its task's output (an ``XComArg``), a mapping with
        ``start_version`` and ``end_version``. None (nothing new) reads and
        writes nothing: the task succeeds with ``version`` None and says so.
        (templated)
    :param output_path: The folder to write the rows to: a path or a
        ``file://``, ``s3://``, ``abfss://`` or ``gs://`` URI. (templated)
    :param output_format: ``parquet`` (default), ``json``, ``csv`` or ``orc``
        (``parquet`` only with ``io="arrow"``).
    """

    request_class = ChangesSpec
    commits_versions = False
    template_fields: Sequence[str] = (
        *DeltaSparkOperator.template_fields,
        "start_version",
        "end_version",
        "version_range",
        "output_path",
    )

    def __init__(
        self,
        *,
        output_path: str,
        start_version: int | str | None = None,
        end_version: int | str | None = None,
        version_range: Any = None,
        output_format: str = "parquet",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if output_format not in CHANGES_OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {CHANGES_OUTPUT_FORMATS}, not {output_format!r}")
        if version_range is not None and (start_version is not None or end_version is not None):
            raise ValueError("give version_range, or start_version and end_version, not both")
        if version_range is None and start_version is None:
            raise ValueError("give start_version (and end_version), or version_range")
        self.start_version = start_version
        self.end_version = end_version
        self.version_range = version_range
        self.output_path = output_path
        self.output_format = output_format
        self._by_range = version_range is not None

    def _bounds(self) -> tuple[Any, Any] | None:
        """(start, end) as given; None for an empty ``version_range``."""
        if not self._by_range:
            return self.start_version, self.end_version
        return _range_bounds(self.version_range)

    def _request_fields(self) -> dict[str, Any]:
        bounds = self._bounds()
        if bounds is None:
            raise ValueError("version_range is empty: there are no changes to read")
        start, end = bounds
        return {
            "start_version": _number(start, "start_version"),
            "end_version": None if end in (None, "") else _number(end, "end_version"),
            "output_path": self.output_path,
            "output_format": self.output_format,
        }

    def execute(self, context: Context) -> DeltaOperationResult:
        try:
            empty = self._bounds() is None
        except ValueError as exc:
            raise AirflowFailException(f"{type(self).__name__}: {exc}") from None
        if empty:
            self.log.info(
                "No new version of %s: no changes read, nothing written to %s", self.table_path, self.output_path
            )
            nothing: DeltaOperationResult = {
                "table": self.table_path,
                "version": None,
                "operation": ChangesSpec.operation.upper(),
                "metrics": {},
            }
            context["ti"].xcom_push(key=VERSION_XCOM_KEY, value=None)
            self._committed = nothing
            return nothing
        result = super().execute(context)
        if not result["metrics"]:  # the driver's stdout did not come back (cluster deploy mode)
            from airflow_delta_provider.delta.table_changes import read_summary

            summary = read_summary(self.output_path, self.hook.storage_options or None) or {}
            result["version"] = summary.get("version")
            result["metrics"] = summary.get("metrics") or {}
            context["ti"].xcom_push(key=VERSION_XCOM_KEY, value=result["version"])
        self.log.info("changes of %s: %s", self.table_path, result["metrics"].get("changes"))
        return result

    def _openlineage(self, result: DeltaOperationResult | None) -> Any:
        from airflow_delta_provider.lineage.build import changes_lineage

        version = None if result is None else result.get("version")
        return changes_lineage(self.table_path, self.output_path, version, lambda: self.hook.storage_options)


class DeltaAlterTableOperator(DeltaSparkOperator):
    """One ALTER TABLE change as a metadata-only commit: no data file is
    written, and, except to add a CHECK constraint, none is read and the
    Spark application starts no SparkSession.

    ``change`` names exactly one kind of change:

    - ``{"add_columns": [{"name": "s.c", "type": "long", "comment": "..."}]}``
      (types as in Delta's schema JSON; NOT NULL columns cannot be added);
    - ``{"rename_column": {"column": "a", "to": "b"}}`` and
      ``{"drop_columns": ["a", "s.c"]}``, which need column mapping;
    - ``{"alter_column": {"column": "a", "comment": "...", "nullable": True}}``;
    - ``{"set_properties": {"delta.appendOnly": "true"}}`` and
      ``{"unset_properties": ["k"], "if_exists": True}``;
    - ``{"add_constraint": {"name": "amount_positive", "expression": "amount > 0"}}``
      (a Spark job first checks that no row breaks it; not with ``engine="python"``)
      and ``{"drop_constraint": {"name": "amount_positive", "if_exists": True}}``;
    - ``{"drop_feature": {"name": "inCommitTimestamp"}}``: drops a writer-only
      table feature (``checkConstraints`` once the table has no constraint,
      ``inCommitTimestamp``, ``vacuumProtocolCheck``, ``rowTracking``) and ``v2Checkpoint``
      as delta-spark's ``ALTER TABLE ... DROP FEATURE`` does: a preparation
      commit when the feature has traces to remove, then the protocol
      downgrade (for ``v2Checkpoint`` behind three checkpointed empty
      commits and ``checkpointProtection``; with ``"truncate_history": True``,
      delta-spark's drop with history truncation, in two runs: the first
      removes the feature's traces and fails asking to run again once
      ``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours) has
      passed; that run truncates the history and downgrades).
      ``deletionVectors`` and ``typeWidening`` likewise, after their
      preparation rewrites the files that still use them (a Spark job: not
      with ``engine="python"``). Other reader-writer features are refused.
      ``drop_feature="v2Checkpoint"`` (with ``truncate_history``) says the
      same in short, as the CLI's ``--drop-feature NAME [--truncate-history]``.

    :param change: The change, as above, or its JSON text (a Jinja template
        of it too). (templated)
    :param drop_feature: Instead of ``change``: the table feature to drop. (templated)
    :param truncate_history: With ``drop_feature``: the drop with history
        truncation (``DROP FEATURE ... TRUNCATE HISTORY``), in two runs as above.
    :param enable_column_mapping: Turn column mapping on (mode ``name``) in
        the same commit when a rename or drop needs it. Readers of the table
        then need column mapping support (reader version 2).
    """

    request_class = AlterSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "change", "drop_feature")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "change": "json",
    }

    def __init__(
        self,
        *,
        change: Mapping[str, Any] | str | None = None,
        drop_feature: str | None = None,
        truncate_history: bool = False,
        enable_column_mapping: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (change is None) == (drop_feature is None):
            raise ValueError("give change or drop_feature, not both or neither")
        if truncate_history and drop_feature is None:
            raise ValueError(
                "truncate_history goes with drop_feature (with change, it is the drop_feature change's own "
                'key: {"drop_feature": {"name": ..., "truncate_history": true}})'
            )
        if isinstance(change, Mapping):  # JSON text (a template, say) is checked when the task runs
            kinds = [k for k in change if k in ALTER_CHANGES]
            if len(kinds) != 1:
                raise ValueError(f"change must name exactly one of {ALTER_CHANGES}, got {sorted(change)}")
            if kinds == ["add_constraint"] and self.engine == "python":
                raise ValueError(
                    "adding a CHECK constraint checks the table's rows: it needs Spark, not engine='python'"
                )
        dropping = drop_feature
        if isinstance(change, Mapping) and isinstance(change.get("drop_feature"), Mapping):
            dropping = change["drop_feature"].get("name")
        if dropping in REWRITING_DROPS and self.engine == "python":
            raise ValueError(f"dropping {dropping} rewrites data files: it needs Spark, not engine='python'")
        self.change = dict(change) if isinstance(change, Mapping) else change
        self.drop_feature = drop_feature
        self.truncate_history = truncate_history
        self.enable_column_mapping = enable_column_mapping

    def _request_fields(self) -> dict[str, Any]:
        return {
            "change": json.dumps(self.change) if isinstance(self.change, Mapping) else self.change,
            "drop_feature": self.drop_feature,
            "truncate_history": bool(self.truncate_history),
            "enable_column_mapping": bool(self.enable_column_mapping),
        }


class DeltaRestoreOperator(DeltaSparkOperator):
    """Restore the table to an earlier version, as delta-spark's ``RESTORE
    TABLE ... TO VERSION AS OF`` does: one new commit re-adds the files that
    version had and removes the ones added since, and brings back its schema
    and properties. No data file is read or written (``engine="python"`` runs
    it with no Spark). If a file the version needs was vacuumed, the task
    fails naming it, and nothing is committed.

    :param version: The version to restore, e.g. one an upstream task pushed. (templated)
    :param timestamp: Or: restore the newest version committed at or before
        this time (ISO 8601; UTC unless it has a zone). (templated)
    """

    request_class = RestoreSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "version", "timestamp")

    def __init__(self, *, version: int | str | None = None, timestamp: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (version is None) == (timestamp is None):
            raise ValueError("DeltaRestoreOperator needs version or timestamp (one of them)")
        self.version = version
        self.timestamp = timestamp

    def _request_fields(self) -> dict[str, Any]:
        if self.version is not None:
            return {"version": _number(self.version, "version")}
        return {"timestamp": str(self.timestamp)}

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {}}  # the table, from an earlier version of itself


class DeltaOptimizeOperator(DeltaSparkOperator):
    """Compact small files, Z-order, or cluster, as delta-spark's ``OPTIMIZE`` does.

    The files of each partition smaller than the target size are packed into
    files close to it; with ``zorder_by``, every file of each partition is
    rewritten sorted by the Z-order of those columns, so filters on any of
    them skip more files. On a liquid-clustered table (see
    ``DeltaAppendOperator``'s ``cluster_by``) it clusters the files not yet
    clustered by the table's clustering columns; ``full=True`` also reclusters
    those clustered by other columns (``OPTIMIZE FULL``). The rows do not change: the commit's files carry
    ``dataChange=false``, and a concurrent append does not conflict with it.
    With nothing to rewrite nothing is committed, and ``version`` is None.

    :param where: A condition on partition columns: only those partitions. (templated)
    :param target_size: Bytes per file (default: ``delta.targetFileSize``, else 128 MiB). (templated)
    :param zorder_by: Columns to Z-order by, as a list or one comma-separated
        string (integral, decimal, date, timestamp or string, with statistics; not
        partition columns; never on a clustered table). (templated)
    :param full: On a clustered table, also recluster the files clustered by
        other columns or another provider (``OPTIMIZE FULL``, as delta-spark's).
    """

    request_class = OptimizeSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "where", "target_size", "zorder_by")
    template_fields_renderers: ClassVar[dict[str, str]] = {
        **DeltaSparkOperator.template_fields_renderers,
        "where": "sql",
    }

    def __init__(
        self,
        *,
        where: str | None = None,
        target_size: int | str | None = None,
        zorder_by: Sequence[str] | str | None = None,
        full: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.where = where
        self.target_size = target_size
        self.zorder_by = zorder_by  # a list, or one string of comma-separated names (templates render strings)
        self.full = full
        _check_unless_templated(self, target_size)

    def _request_fields(self) -> dict[str, Any]:
        return {
            "where": self.where or None,  # a template that rendered nothing: every partition
            "target_size": _number(self.target_size, "target_size"),
            "zorder_by": _column_names(self.zorder_by),
            "full": bool(self.full),
        }

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {}}  # the same rows, rewritten


class DeltaConvertOperator(DeltaSparkOperator):
    """Make a folder of Parquet files a Delta table in place: ``CONVERT TO DELTA``.

    Version 0 lists every Parquet file of the folder (hidden ones, such as
    ``_SUCCESS``, skipped), with the schema merged from their footers and
    statistics from them; no data file is copied, moved or rewritten. A
    folder that already holds a Delta table is refused, as are files whose
    schemas disagree (named in the error); nothing is then written.

    :param partition_by: The Hive partition columns of the folders, in their
        order, with their types: ``"day date, region string"``, or a mapping
        ``{"day": "date", "region": "string"}``. (templated)
    :param table_properties: Table properties (``delta.*``) of the new table. (templated)
    :param engine: ``python`` (default): the task's process reads the footers
        and commits, with no Spark; ``spark`` runs the same work in the
        driver of a Spark application.
    """

    request_class = ConvertSpec
    template_fields: Sequence[str] = (*DeltaSparkOperator.template_fields, "partition_by", "table_properties")

    def __init__(
        self,
        *,
        partition_by: str | Mapping[str, str] | None = None,
        table_properties: Mapping[str, Any] | None = None,
        engine: str = "python",
        **kwargs: Any,
    ) -> None:
        super().__init__(engine=engine, **kwargs)
        self.partition_by = partition_by
        self.table_properties = table_properties

    def _request_fields(self) -> dict[str, Any]:
        spec = self.partition_by
        if isinstance(spec, Mapping):
            spec = ", ".join(f"{name} {type_}" for name, type_ in spec.items())
        return {"partition_by": spec or None, "table_properties": _pairs(self.table_properties or {})}


class DeltaGenerateManifestOperator(DeltaSparkOperator):
    """Write the table's symlink format manifests: ``GENERATE symlink_format_manifest``.

    Engines without a Delta reader (Presto, Trino's Hive connector, Athena,
    Redshift Spectrum) read a Delta table through
    ``_symlink_format_manifest/<partition>/manifest``, the list of each
    partition's live files. This writes every manifest of the latest version
    and deletes those of partitions with no file left; it commits nothing, and
    ``version`` is the version the manifests reflect. A table with deletion
    vectors or column mapping is refused. With
    ``delta.compatibility.symlinkFormatManifest.enabled=true`` every commit
    keeps them current (``docs/manifests.rst``).

    :param mode: What to generate: ``symlink_format_manifest`` (the only mode).
    :param engine: ``python`` (default): the task's process reads the log and
        writes the manifests, with no Spark; ``spark`` runs the same work in
        the driver of a Spark application.
    """

    request_class = GenerateSpec
    commits_versions = False

    def __init__(self, *, mode: str = GENERATE_MODES[0], engine: str = "python", **kwargs: Any) -> None:
        super().__init__(engine=engine, **kwargs)
        if mode not in GENERATE_MODES:
            raise ValueError(f"mode must be one of {GENERATE_MODES}, not {mode!r}")
        self.mode = mode

    def _request_fields(self) -> dict[str, Any]:
        return {"mode": self.mode}


class DeltaCloneOperator(DeltaSparkOperator):
    """Make ``table_path`` a shallow clone of another Delta table:
    ``CREATE [OR REPLACE] TABLE t SHALLOW CLONE source [VERSION AS OF n]``.

    Version 0 of the new table has the source's schema, properties and
    protocol, and adds that name the source's data files by absolute URI; no
    data file is copied. Writes to the clone write its own files, and VACUUM
    on the clone never deletes the source's; VACUUM on the source may delete
    files the clone still reads (``docs/clone.rst``). A target that is a
    Delta table already is refused unless ``replace``; nothing is then written.

    :param source_path: The Delta table to clone: a path or URI; the storage
        connection's credentials must reach it too. (templated)
    :param version: The source's version to clone (default: its latest). (templated)
    :param timestamp: Instead of ``version``: the source's newest version
        committed at or before this time (ISO 8601, UTC if no zone). (templated)
    :param replace: Replace ``table_path`` if it is a Delta table already
        (``CREATE OR REPLACE``): its files the clone does not add again are
        removed in the same commit.
    :param table_properties: Table properties (``delta.*``) overriding the source's. (templated)
    :param engine: ``python`` (default): the task's process commits the
        clone, with no Spark; ``spark`` runs the same work in the driver of
        a Spark application.
    """

    request_class = CloneSpec
    template_fields: Sequence[str] = (
        *DeltaSparkOperator.template_fields,
        "source_path",
        "version",
        "timestamp",
        "table_properties",
    )

    def __init__(
        self,
        *,
        source_path: str,
        version: int | str | None = None,
        timestamp: str | None = None,
        replace: bool = False,
        table_properties: Mapping[str, Any] | None = None,
        engine: str = "python",
        **kwargs: Any,
    ) -> None:
        super().__init__(engine=engine, **kwargs)
        if version is not None and timestamp is not None:
            raise ValueError("DeltaCloneOperator takes version or timestamp, not both")
        self.source_path = source_path
        self.version = version
        self.timestamp = timestamp
        self.replace = replace
        self.table_properties = table_properties

    def _request_fields(self) -> dict[str, Any]:
        return {
            "source_path": self.source_path,
            "version": _number(self.version, "version"),
            "timestamp": None if self.timestamp is None else str(self.timestamp),
            "replace": bool(self.replace),
            "table_properties": _pairs(self.table_properties or {}),
        }

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"sources": [(self.source_path, "delta")], "source_has_table_columns": True}


def _column_names(value: Sequence[str] | str | None) -> tuple[str, ...]:
    """Column names given as a list, or as one comma-separated string (what a template renders)."""
    names = value.split(",") if isinstance(value, str) else list(value or [])
    return tuple(str(name).strip() for name in names if str(name).strip())
