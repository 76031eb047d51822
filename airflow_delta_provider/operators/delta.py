"""Operators that change a Delta table, each as one Spark application.

They are thin: each turns its arguments into its request (one frozen
dataclass per operation, ``airflow_delta_provider/operations/<op>/spec.py``), whose argv
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

import dataclasses
import inspect
import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseHook, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_delta_provider.assets.events import drop_table_outlets, emit_commit_event, table_alias
from airflow_delta_provider.assets.uri import table_asset_uri
from airflow_delta_provider.delta.catalog.reference import is_catalog_reference
from airflow_delta_provider.hooks.delta_in_process import SPARK_CONNECT_CONN_TYPE, DeltaInProcessHook
from airflow_delta_provider.hooks.delta_operation import DeltaOperationResult, operation_token
from airflow_delta_provider.hooks.delta_spark import DeltaSparkHook
from airflow_delta_provider.operations.alter.spec import AlterSpec
from airflow_delta_provider.operations.append.spec import (
    AppendSpec,
)
from airflow_delta_provider.operations.changes.spec import ChangesSpec
from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.clone.spec import CloneSpec
from airflow_delta_provider.operations.convert.spec import ConvertSpec
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.generate.spec import GenerateSpec
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.optimize.spec import OptimizeSpec
from airflow_delta_provider.operations.register.spec import RegisterSpec
from airflow_delta_provider.operations.registry import PYTHON_ENGINE_OPERATIONS
from airflow_delta_provider.operations.reorg.spec import ReorgSpec
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.sources.spec import parse_source_views
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import UNSET, Argument, argument_of, number
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.operations.vacuum.spec import VacuumSpec
from airflow_delta_provider.operators.version_link import DeltaVersionLink

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


# --- the operators' signatures, from the specs ------------------------------------------

#: Values a DAG file passes as they are; anything else (an ``XComArg``, say) is resolved when the task runs.
_PLAIN = (str, int, float, bool, type(None), Mapping, list, tuple)


def _unrendered(value: Any) -> bool:
    """Whether ``value`` is only known once the task runs: a Jinja template, or an ``XComArg``."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_unrendered(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_unrendered(v) for v in value)
    return not isinstance(value, _PLAIN)


def _signature(cls: type[DeltaSparkOperator]) -> inspect.Signature:
    """The operator's keyword arguments, as ``inspect`` and Airflow see them: the class's own
    (if it has any), then its spec's fields, then those every Delta operator takes."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = {"self": inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    for parameter in inspect.signature(cls.__dict__["__init__"]).parameters.values():
        if parameter.kind == keyword:
            parameters[parameter.name] = parameter
    for name in cls.spec_arguments:
        field = cls.spec_class.__dataclass_fields__[name]
        required = field.default is dataclasses.MISSING and name not in cls.optional_fields
        default = inspect.Parameter.empty if required else _default(cls, name)
        parameters.setdefault(name, inspect.Parameter(name, keyword, default=default, annotation=field.type))
    for parameter in inspect.signature(DeltaSparkOperator.__init__).parameters.values():
        if parameter.kind == keyword:
            parameters.setdefault(parameter.name, parameter)
    parameters["kwargs"] = inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)
    return inspect.Signature(list(parameters.values()))


def _default(cls: type[DeltaSparkOperator], name: str) -> Any:
    """An argument's value when a task leaves it out: the operator's default, else the spec field's."""
    argument = cls.spec_arguments[name]
    if argument.operator_default is not UNSET:
        return argument.operator_default
    field = cls.spec_class.__dataclass_fields__[name]
    return None if field.default is dataclasses.MISSING else field.default


class DeltaSparkOperator(BaseOperator):
    """Base of the Delta operators: one operation, one Spark application, one commit.

    :param table_path: The table's location, as the Spark driver sees it: a
        path, or a ``file://``, ``s3://`` (``s3a://``, ``s3n://``),
        ``abfss://`` (``abfs://``, ``az://``, ``azure://``) or ``gs://``
        (``gcs://``) URI; or its name in a catalog (``uc://``, ``glue://``,
        ``hms://``, see ``catalog_conn_id``). (templated)
    :param conn_id: The Spark connection (default ``spark_default``): a
        ``spark`` connection runs one spark-submit; a ``spark_connect``
        connection (``sc://host:port``) runs the operation in the task's
        process as a Spark Connect client, with no JVM of its own.
    :param storage_conn_id: An ``aws``, ``wasb``/``adls`` or
        ``google_cloud_platform`` connection with the store's credentials;
        None uses each cloud's own chain. Secrets travel by environment only.
    :param catalog_conn_id: For a table named in a catalog (``table_path`` of
        ``uc://catalog.schema.table``, ``glue://database.table`` or
        ``hms://database.table``): a ``unity_catalog`` (or ``databricks``),
        ``aws`` or ``hive_metastore`` connection; None: the environment's
        ``UNITY_CATALOG_URL``/``UNITY_CATALOG_TOKEN``, AWS chain or
        ``HIVE_METASTORE_URI`` (``docs/catalogs.rst``).
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

    Each subclass names its operation's spec (``spec_class``): its keyword
    arguments, its ``template_fields`` and their renderers all come from the
    spec's fields, and a subclass declares none of them itself.
    """

    #: The operation's spec: the one declaration of its arguments.
    spec_class: ClassVar[type[OperationSpec]]
    #: The Spark CLI command this operator runs: its spec's operation.
    operation: ClassVar[str]
    #: Whether a run commits a table version (and then emits an asset event for the table).
    commits_versions: ClassVar[bool] = True
    #: ``engine`` when the task does not give one.
    default_engine: ClassVar[str] = "spark"
    #: Spec fields the operator lets a task leave out although the spec requires them
    #: (the operator fills them from an argument of its own).
    optional_fields: ClassVar[tuple[str, ...]] = ()
    #: The spec's fields this operator takes, by name (from ``spec_class``).
    spec_arguments: ClassVar[dict[str, Argument]] = {}

    template_fields: Sequence[str] = ("conf", "env_vars", "name")
    template_fields_renderers: ClassVar[dict[str, str]] = {"conf": "json", "env_vars": "json"}
    ui_color = "#9fe3f5"
    #: A writer links to the page of the version it committed (the plugin's, in Airflow's UI).
    operator_extra_links = (DeltaVersionLink(),)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.commits_versions:
            cls.operator_extra_links = ()
        spec_class = cls.__dict__.get("spec_class")
        if spec_class is None:
            return
        cls.operation = spec_class.operation
        cls.spec_arguments = {
            field.name: argument_of(field) for field in dataclasses.fields(spec_class) if argument_of(field).in_operator
        }
        templated = [name for name, argument in cls.spec_arguments.items() if argument.templated]
        own = [name for name in cls.__dict__.get("own_template_fields", ())]
        cls.template_fields = (*templated, *DeltaSparkOperator.template_fields, *own)
        cls.template_fields_renderers = {
            **DeltaSparkOperator.template_fields_renderers,
            **{name: argument.renderer for name, argument in cls.spec_arguments.items() if argument.renderer},
        }
        if "__init__" not in cls.__dict__:

            def __init__(self: DeltaSparkOperator, **kwargs: Any) -> None:
                super(cls, self).__init__(**kwargs)

            __init__.__qualname__ = f"{cls.__qualname__}.__init__"
            cls.__init__ = __init__  # type: ignore[method-assign]
        cls.__init__.__signature__ = _signature(cls)  # type: ignore[attr-defined]

    def __init__(
        self,
        *,
        conn_id: str = DeltaSparkHook.default_conn_name,
        storage_conn_id: str | None = None,
        catalog_conn_id: str | None = None,
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
        engine: str | None = None,
        **kwargs: Any,
    ) -> None:
        values = {
            name: kwargs.pop(name) if name in kwargs else _default(type(self), name) for name in self.spec_arguments
        }
        super().__init__(**kwargs)
        for field_name, value in values.items():
            setattr(self, field_name, value)
        engine = engine or self.default_engine
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if engine == "python" and self.operation not in PYTHON_ENGINE_OPERATIONS:
            raise ValueError(
                f"engine='python' runs only {', '.join(PYTHON_ENGINE_OPERATIONS)}; {self.operation} needs Spark"
            )
        self.conn_id = conn_id
        self.storage_conn_id = storage_conn_id
        self.catalog_conn_id = catalog_conn_id
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
        self.engine = engine
        # Named after the path as written: the alias is declared before templates are rendered.
        self._table_alias = table_alias(self.table_path) if self.commits_versions else None
        if self._table_alias is not None:
            self.outlets = [*self.outlets, self._table_alias]
        # The last run's result, for get_openlineage_facets_on_complete.
        self._committed: DeltaOperationResult | None = None
        # Where the table is: a catalog name's location once the run resolved it.
        self._location: str | None = None
        if self._known_now():  # a template is checked once rendered, when the task runs
            try:
                self._check(self.spec())
            except ValueError as exc:  # the DAG file fails to parse, naming the operator
                raise ValueError(f"{type(self).__name__}: {exc}") from None

    def spec(self, token: str | None = None) -> OperationSpec:
        """The spec of this task, from its (rendered) arguments; ``token`` names its change.

        ValueError (:class:`~airflow_delta_provider.delta.errors.InvalidArgumentError`
        among them) names a wrong argument."""
        values = {
            name: argument.from_operator(name, getattr(self, name)) for name, argument in self.spec_arguments.items()
        }
        return self.spec_class(**self.spec_values(values), token=token)

    #: The old name of :meth:`spec`.
    request = spec

    def _known_now(self) -> bool:
        """Whether every templated argument is known when the DAG is parsed (no template, no ``XComArg``)."""
        return not any(_unrendered(getattr(self, name, None)) for name in self.template_fields)

    def spec_values(self, values: dict[str, Any]) -> dict[str, Any]:
        """The spec's fields from the operator's, for an operator that fills some from its own arguments."""
        return values

    def _check(self, spec: OperationSpec) -> None:
        """What the spec cannot know: whether ``engine="python"`` can run it."""
        if self.engine == "python" and spec.requires_spark():
            raise ValueError(f"{spec.spark_reason()}: it needs Spark, not engine='python'")

    def cli_arguments(self) -> list[str]:
        """The Spark CLI's options for this operation (after the table path)."""
        return self.spec().operation_arguments()

    @cached_property
    def hook(self) -> DeltaSparkHook | DeltaInProcessHook:
        """The hook, built once per try from the rendered arguments: in-process
        for ``engine="python"`` and ``spark_connect`` connections, else spark-submit."""
        if self.engine == "python":
            return DeltaInProcessHook(None, storage_conn_id=self.storage_conn_id, catalog_conn_id=self.catalog_conn_id)
        if self._conn_type() == SPARK_CONNECT_CONN_TYPE:
            ignored = sorted(a for a in _SPARK_SUBMIT_ONLY if getattr(self, a) is not None)
            if ignored or self.hook_params:
                self.log.warning(
                    "Over Spark Connect, these spark-submit arguments are ignored: %s",
                    ", ".join([*ignored, *sorted(self.hook_params)]),
                )
            return DeltaInProcessHook(
                self.conn_id, storage_conn_id=self.storage_conn_id, catalog_conn_id=self.catalog_conn_id, conf=self.conf
            )
        return DeltaSparkHook(
            conn_id=self.conn_id,
            storage_conn_id=self.storage_conn_id,
            catalog_conn_id=self.catalog_conn_id,
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
            request = self.spec(token)
            self._check(request)
        except ValueError as exc:  # a rendered argument of the wrong kind: no retry mends it
            raise AirflowFailException(f"{type(self).__name__}: {exc}") from None
        # spark-submit runs the spec's argv; in this process (Connect, engine="python") the spec runs as it is.
        result = self.hook.run_spec(request, not_before=getattr(dag_run, "start_date", None))
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
        self._location = result["table"]  # a catalog name's location once resolved; else the path
        ti.xcom_push(key=VERSION_XCOM_KEY, value=result["version"])
        if self._table_alias is not None:
            self._emit_asset_event(context, self._table_alias, result)
        self._committed = result
        return result

    def _emit_asset_event(self, context: Context, alias: Any, result: DeltaOperationResult) -> None:
        """After a commit, an event on the table's asset with the result as its ``extra``,
        once per version (:mod:`airflow_delta_provider.assets.events`)."""
        table, options = self._table_location(), self._uri_options()
        # The table's own asset among the outlets: named by the alias event, never recorded for nothing.
        dropped = drop_table_outlets(self, table_asset_uri(table, options))
        committed_at = None
        if self.hook.earlier_commit is not None and result["version"] is not None:
            # Read by the hook with the commit (a catalog's vended credentials are gone by now).
            committed_at = self.hook.earlier_commit_at or 0
        uri = emit_commit_event(
            context,
            alias,
            table,
            result,
            options,
            declared=dropped[0] if dropped else None,
            committed_at_ms=committed_at,
            catalog_name=self.table_path if is_catalog_reference(self.table_path) else None,
        )
        if uri is not None:
            self.log.info("Asset event for %s: version %s", uri, result["version"])

    def _table_location(self) -> str:
        """Where the table is: the (rendered) path, or a catalog name's location once the run resolved it."""
        return self._location or self.table_path

    def _uri_options(self) -> dict[str, str] | None:
        """The store settings the table's asset URI needs (an ``az://`` path's account), else None."""
        from airflow_delta_provider.lineage.naming import needs_storage_options

        return self.hook.storage_options if needs_storage_options(self._table_location()) else None

    def table_asset_uri(self) -> str:
        """The asset URI of the table's location: the table's one name (a catalog name's, once resolved)."""
        return table_asset_uri(self._table_location(), self._uri_options())

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

        table, catalog_name = self._lineage_table()
        if table is None:  # a catalog name not resolved yet (before the run): its location is unknown
            return None
        return operator_lineage(
            table,
            result,
            lambda: self.hook.storage_options,
            catalog_name=catalog_name,
            **self._lineage_arguments(),
        )

    def _lineage_table(self) -> tuple[str | None, Any]:
        """The table's storage path for lineage, and its catalog name (a ``DatasetName``) when it has one."""
        if not is_catalog_reference(self.table_path):
            return self.table_path, None
        from airflow_delta_provider.hooks.delta_catalog import DeltaCatalogHook
        from airflow_delta_provider.lineage.naming import catalog_dataset_name

        settings = DeltaCatalogHook(self.catalog_conn_id).settings()
        where = {"uc": settings.unity_url, "hms": settings.hive_uri, "glue": settings.aws.get("region_name")}
        return self._location, catalog_dataset_name(self.table_path, where.get(self.table_path.split(":", 1)[0]))

    def _lineage_arguments(self) -> dict[str, Any]:
        """What :func:`~airflow_delta_provider.lineage.build.operator_lineage` needs beyond the table."""
        return {}


class DeltaUpdateOperator(DeltaSparkOperator):
    """Update the rows that match a condition: ``UPDATE t SET c = expr WHERE cond``.

    :param updates: Column name -> SQL expression of its new value, e.g.
        ``{"status": "'late'", "amount": "amount * 2"}``. (templated)
    :param condition: SQL condition; all rows when None. (templated)
    """

    spec_class = UpdateSpec

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"rewrite": {"assignments": self.updates, "condition": self.condition}}


class DeltaDeleteOperator(DeltaSparkOperator):
    """Delete the rows that match a condition: ``DELETE FROM t WHERE cond``.

    :param condition: SQL condition; all rows when None. (templated)
    """

    spec_class = DeleteSpec

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
    :param user_metadata: Text recorded as the commit's ``userMetadata``
        (delta-spark's ``userMetadata`` write option). (templated)
    """

    spec_class = AppendSpec

    def spec_values(self, values: dict[str, Any]) -> dict[str, Any]:
        # ``source_format`` (default parquet) describes a source path; a query's views carry their own.
        return values if self.source is not None else {**values, "source_format": None}

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

    spec_class = MergeSpec

    def _lineage_arguments(self) -> dict[str, Any]:
        sources = _lineage_sources(self.source, self.source_format, self.source_views)
        return {"rewrite": {}, "sources": sources, "joins_source": True}


class DeltaCheckpointOperator(DeltaSparkOperator):
    """Write a checkpoint of the table's latest version.

    A checkpoint commits nothing: ``version`` is the checkpointed version.

    :param cleanup_logs: Also delete commits and checkpoints older than the
        table's log retention (``delta.logRetentionDuration``).
    """

    spec_class = CheckpointSpec
    commits_versions = False


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

    spec_class = VacuumSpec


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

    spec_class = ReorgSpec

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

    spec_class = ChangesSpec
    commits_versions = False
    optional_fields = ("start_version",)
    own_template_fields = ("version_range",)

    def __init__(self, *, version_range: Any = None, **kwargs: Any) -> None:
        given = kwargs.get("start_version") is not None or kwargs.get("end_version") is not None
        if version_range is not None and given:
            raise ValueError("give version_range, or start_version and end_version, not both")
        if version_range is None and kwargs.get("start_version") is None:
            raise ValueError("give start_version (and end_version), or version_range")
        self.version_range = version_range
        # Whether the bounds come from the range: it may render to None (nothing new) when the task runs.
        self._by_range = version_range is not None
        super().__init__(**kwargs)

    def _known_now(self) -> bool:
        return not self._by_range and super()._known_now()

    def _bounds(self) -> tuple[Any, Any] | None:
        """(start, end) as given; None for an empty ``version_range``."""
        if not self._by_range:
            return self.start_version, self.end_version
        return _range_bounds(self.version_range)

    def spec_values(self, values: dict[str, Any]) -> dict[str, Any]:
        bounds = self._bounds()
        if bounds is None:
            raise ValueError("version_range is empty: there are no changes to read")
        start, end = bounds
        return {
            **values,
            "start_version": number(start, "start_version"),
            "end_version": None if end in (None, "") else number(end, "end_version"),
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

    spec_class = AlterSpec


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

    spec_class = RestoreSpec

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

    spec_class = OptimizeSpec

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

    spec_class = ConvertSpec
    default_engine = "python"


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

    spec_class = GenerateSpec
    commits_versions = False
    default_engine = "python"


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

    spec_class = CloneSpec
    default_engine = "python"

    def _lineage_arguments(self) -> dict[str, Any]:
        return {"sources": [(self.source_path, "delta")], "source_has_table_columns": True}


class DeltaRegisterTableOperator(DeltaSparkOperator):
    """Create the catalog entry of a Delta table that already exists at a path.

    ``table_path`` is the name to give it (``uc://catalog.schema.table``,
    ``glue://database.table`` or ``hms://database.table``) and ``location``
    where the table is. The entry is what the table would get if an APPEND by
    that name had created it (``docs/catalogs.rst``): for Unity Catalog an
    external Delta table with its columns; for Glue and the Hive Metastore the
    entry delta-spark and Athena read. Nothing is committed to the table; the
    result's ``version`` is the version registered. A location with no Delta
    table, or a name already registered elsewhere, fails and registers nothing;
    a name already registered at that location is left as it is (a retry).

    :param location: Where the table is stored: a path or URI. (templated)
    :param engine: ``python`` (default): the task's process reads the log and
        writes the entry, with no Spark.
    """

    spec_class = RegisterSpec
    commits_versions = False
    default_engine = "python"
