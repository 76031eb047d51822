"""Table health and a maintenance autopilot: read the log, then run only the upkeep that is due.

- :class:`DeltaTableHealthOperator` returns the table's health report
  (:meth:`~airflow_delta_provider.delta.health.report.HealthReport.to_dict`) as
  its XCom value, read from ``_delta_log`` in the task's process, with no Spark;
- :class:`DeltaMaintenanceOperator` is a branch: it measures the same report,
  decides (:func:`~airflow_delta_provider.delta.health.decisions.decide`) which
  steps are due, logs the report and the decisions as one table, pushes the
  decisions under the XCom key ``decisions`` and the report under ``report``,
  and follows the tasks of the due steps only;
- :func:`delta_maintenance_group` builds the task group: the branch, then the
  ordinary OPTIMIZE, REORG (purge), VACUUM and CHECKPOINT operators, in that
  order, each skipped unless due, each taking its arguments (OPTIMIZE's
  ``where``, REORG's ``min_deleted_ratio``) from the decisions through
  templates, each with its own commit and XCom. VACUUM is two tasks,
  ``vacuum_lite`` and ``vacuum`` (full): the branch follows the one decided.

Both operators can write the report as an HTML page
(:mod:`~airflow_delta_provider.delta.health.page`) to ``report_path``, a local
folder or an object-store URI, and link it from the task
(:class:`DeltaHealthReportLink`, an extra link).

Importing this module imports neither pyspark, pyarrow nor obstore.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.standard.operators.branch import BaseBranchOperator
from airflow.sdk import BaseOperatorLink, TaskGroup

from airflow_delta_provider.operators.delta import (
    DeltaCheckpointOperator,
    DeltaOptimizeOperator,
    DeltaPurgeDeletionVectorsOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.operators.table_info import DeltaTableInfoOperator

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.sdk.types import TaskInstanceKey

    from airflow_delta_provider.delta.table import DeltaTable

#: XCom keys: the page's URL, the decisions, the report (the maintenance branch's).
REPORT_URL_XCOM_KEY = "health_report_url"
DECISIONS_XCOM_KEY = "decisions"
REPORT_XCOM_KEY = "report"
#: XCom key of the branch's list of the task ids it follows (its return value is None when empty).
DUE_TASKS_XCOM_KEY = "due_tasks"
#: The key of ``step_task_ids`` for the task that runs the ``vacuum`` step as VACUUM LITE.
LITE_VACUUM_STEP = "vacuum_lite"
#: The only engine: the report is read from the log, with no Spark.
HEALTH_ENGINES = ("python",)


class DeltaHealthReportLink(BaseOperatorLink):
    """The HTML page of the task's health report, when it wrote one."""

    name = "Delta health report"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        return XCom.get_value(ti_key=ti_key, key=REPORT_URL_XCOM_KEY) or ""


class DeltaTableHealthOperator(DeltaTableInfoOperator):
    """Return the health report of a table's latest version, read from the log alone.

    The XCom value has, among others (``docs/maintenance.rst`` lists them):
    ``partitions`` (files, bytes, small files and deleted rows of each),
    ``smallFileShare``, ``deletedRowShare``, ``commitsSinceCheckpoint``,
    ``lastOptimize`` and ``lastVacuum`` (version, time, ``ageSeconds``),
    ``vacuumableBytes`` and ``clusteringCoverage``.

    :param engine: ``python`` (the only one: nothing for Spark to do).
    :param thresholds: Overrides of
        :class:`~airflow_delta_provider.delta.health.decisions.MaintenanceThresholds`
        by field name (``small_file_size`` also sets what the report counts as small). (templated)
    :param report_path: A folder (path or object-store URI) to write the report's
        HTML page to, as ``<dag_id>/<task_id>/<run_id>.html``; None writes none. (templated)
    :param report_url: The URL at which ``report_path`` is served (a web server,
        a bucket's website), for the task's extra link; by default the link is
        the page's own location (``file://`` or the object's URI).
    :param report_conn_id: The connection whose credentials reach ``report_path``
        (a report location on another cloud than the table); None: ``storage_conn_id``.

    The page is a by-product: when it cannot be written (a store error, missing
    credentials), the task logs a warning naming the page and goes on, so the
    maintenance branch still decides and runs.
    """

    template_fields: Sequence[str] = (*DeltaTableInfoOperator.template_fields, "thresholds", "report_path")
    template_fields_renderers: ClassVar[dict[str, str]] = {"thresholds": "json"}
    operator_extra_links = (DeltaHealthReportLink(),)

    def __init__(
        self,
        *,
        engine: str = "python",
        thresholds: Mapping[str, Any] | None = None,
        report_path: str | None = None,
        report_url: str | None = None,
        report_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if engine not in HEALTH_ENGINES:
            raise ValueError(f"engine must be one of {HEALTH_ENGINES}, not {engine!r}: the report reads the log only")
        self.engine = engine
        self.thresholds = thresholds
        self.report_path = report_path
        self.report_url = report_url
        self.report_conn_id = report_conn_id
        self._context: Context | None = None

    def execute(self, context: Context) -> Any:
        self._context = context
        return super().execute(context)

    def _arguments(self) -> dict[str, Any]:
        return {}

    def read(self, table: DeltaTable, **arguments: Any) -> dict[str, Any]:
        report, _decisions = self.assess(table)
        return report

    def assess(self, table: DeltaTable) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The report and the decisions as documents; logs them, writes the page."""
        from airflow_delta_provider.delta.health.decisions import MaintenanceThresholds, assess
        from airflow_delta_provider.delta.health.text import report_lines

        thresholds = MaintenanceThresholds.of(self.thresholds)
        report, decisions = assess(table, thresholds)
        doc, steps = report.to_dict(), [d.to_dict() for d in decisions]
        self.log.info("Health of %s:\n%s", self.table_path, "\n".join(report_lines(doc, steps)))
        if self.report_path:
            self._write_page(doc, steps)
        return doc, steps

    def _write_page(self, report: dict[str, Any], decisions: list[dict[str, Any]]) -> None:
        """Write the page and push its URL; a failure is a warning, never the task's."""
        from airflow_delta_provider.delta.health.page import render_page
        from airflow_delta_provider.delta.storage import open_storage
        from airflow_delta_provider.utils.storage_connection import storage_settings

        assert self.report_path is not None and self._context is not None
        ti = self._context["ti"]
        name = "/".join(_safe(part) for part in (ti.dag_id, ti.task_id, ti.run_id)) + ".html"
        conn_id = self.report_conn_id if self.report_conn_id is not None else self.storage_conn_id
        try:
            storage = open_storage(self.report_path, storage_settings(conn_id) or None)
            storage.put(name, render_page(report, decisions).encode())
        except Exception as exc:  # the page is a by-product: maintenance goes on without it
            self.log.warning(
                "The health report page %s/%s was not written (%s); maintenance goes on without it",
                _without_userinfo(self.report_path).rstrip("/"),
                name,
                type(exc).__name__,
            )
            return
        url = f"{self.report_url.rstrip('/')}/{name}" if self.report_url else storage.location.child(name)
        if "://" not in url:
            from pathlib import Path

            url = Path(url).resolve().as_uri()
        self.log.info("Health report page: %s", url)
        ti.xcom_push(key=REPORT_URL_XCOM_KEY, value=url)


def _without_userinfo(location: str) -> str:
    """``location`` without a ``user:password@`` part, for a log line."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(location)
    if "@" not in parts.netloc:
        return location
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class DeltaMaintenanceOperator(DeltaTableHealthOperator, BaseBranchOperator):
    """A branch that measures a table's health and follows the tasks of the due steps only.

    It pushes the report under the XCom key ``report`` and the decisions under
    ``decisions``: ``{"due": [step, ...], "steps": {step: {"due", "reason",
    "arguments"}}}`` for each of ``optimize``, ``reorg``, ``vacuum`` and
    ``checkpoint``; its return value is the task ids it follows.

    :param step_task_ids: The task id of each step's task (steps without one are
        decided and logged, never run); under ``vacuum_lite``, the task that
        runs a VACUUM decided as LITE. :func:`delta_maintenance_group` sets it.
    """

    def __init__(self, *, step_task_ids: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step_task_ids = dict(step_task_ids or {})

    def execute(self, context: Context) -> Any:
        self._context = context
        return BaseBranchOperator.execute(self, context)

    def choose_branch(self, context: Context) -> list[str]:
        decided = DeltaTableInfoOperator.execute(self, context)
        due = []
        for step in decided["due"]:
            lite = step == "vacuum" and decided["steps"][step]["arguments"].get("mode") == "lite"
            key = LITE_VACUUM_STEP if lite and LITE_VACUUM_STEP in self.step_task_ids else step
            if key in self.step_task_ids:
                due.append(self.step_task_ids[key])
        self.log.info("Due: %s", ", ".join(decided["due"]) or "nothing")
        context["ti"].xcom_push(key=DUE_TASKS_XCOM_KEY, value=due)
        return due

    def read(self, table: DeltaTable, **arguments: Any) -> dict[str, Any]:
        assert self._context is not None
        report, decisions = self.assess(table)
        decided = {"due": [d["step"] for d in decisions if d["due"]], "steps": {d["step"]: d for d in decisions}}
        ti = self._context["ti"]
        ti.xcom_push(key=REPORT_XCOM_KEY, value=report)
        ti.xcom_push(key=DECISIONS_XCOM_KEY, value=decided)
        return decided


def delta_maintenance_group(
    *,
    table_path: str,
    group_id: str = "maintenance",
    thresholds: Mapping[str, Any] | None = None,
    storage_conn_id: str | None = None,
    catalog_conn_id: str | None = None,
    report_path: str | None = None,
    report_url: str | None = None,
    report_conn_id: str | None = None,
    zorder_by: Sequence[str] | str | None = None,
    retention_hours: float | str | None = None,
    spark_arguments: Mapping[str, Any] | None = None,
    **group_kwargs: Any,
) -> TaskGroup:
    """The autopilot as a task group: ``decide`` (a :class:`DeltaMaintenanceOperator`),
    then ``optimize`` >> ``reorg`` >> ``vacuum_lite`` or ``vacuum`` >> ``checkpoint``, each run only when due.

    OPTIMIZE and REORG run on Spark with ``spark_arguments`` (``conn_id``,
    ``conf``, ...: any :class:`~airflow_delta_provider.operators.delta.DeltaSparkOperator`
    argument); VACUUM and CHECKPOINT need no Spark (``engine="python"``).
    A step that is due still runs when an earlier one was skipped
    (``none_failed_min_one_success``), and not after one failed; a step that
    is not due skips itself (:class:`RunIfDue`), as the branch cannot skip a
    task downstream of one it follows.
    """
    spark = dict(spark_arguments or {})
    common: dict[str, Any] = {
        "table_path": table_path,
        "storage_conn_id": storage_conn_id,
        "catalog_conn_id": catalog_conn_id,
    }
    with TaskGroup(group_id=group_id, **group_kwargs) as group:
        decide = DeltaMaintenanceOperator(
            task_id="decide",
            thresholds=thresholds,
            report_path=report_path,
            report_url=report_url,
            report_conn_id=report_conn_id,
            **common,
        )

        def argument(step: str, name: str, default: str) -> str:
            pulled = f"ti.xcom_pull(task_ids='{decide.task_id}', key='{DECISIONS_XCOM_KEY}')"
            return f"{{{{ ({pulled}['steps']['{step}']['arguments'].get('{name}')) or '{default}' }}}}"

        rule = "none_failed_min_one_success"
        # A branch's skip spares every task downstream of one it follows: each step checks for itself.
        guard: dict[str, Any] = {"trigger_rule": rule, "pre_execute": RunIfDue(decide.task_id)}
        optimize = DeltaOptimizeOperator(
            task_id="optimize",
            where=argument("optimize", "where", ""),
            zorder_by=zorder_by,
            **guard,
            **common,
            **spark,
        )
        reorg = DeltaPurgeDeletionVectorsOperator(
            task_id="reorg",
            min_deleted_ratio=argument("reorg", "min_deleted_ratio", "0"),
            **guard,
            **common,
            **spark,
        )
        vacuum_lite = DeltaVacuumOperator(
            task_id="vacuum_lite",
            engine="python",
            mode="lite",
            retention_hours=retention_hours,
            **guard,
            **common,
        )
        vacuum = DeltaVacuumOperator(
            task_id="vacuum", engine="python", retention_hours=retention_hours, **guard, **common
        )
        checkpoint = DeltaCheckpointOperator(task_id="checkpoint", engine="python", **guard, **common)
        decide.step_task_ids = {
            "optimize": optimize.task_id,
            "reorg": reorg.task_id,
            "vacuum": vacuum.task_id,
            LITE_VACUUM_STEP: vacuum_lite.task_id,
            "checkpoint": checkpoint.task_id,
        }
        decide >> [optimize, reorg, vacuum_lite, vacuum, checkpoint]
        optimize >> reorg >> [vacuum_lite, vacuum] >> checkpoint
    return group


class RunIfDue:
    """A step's ``pre_execute``: skip the task unless the maintenance branch followed it.

    A branch skips only its direct downstream tasks that it does not follow,
    and spares every task downstream of one it follows; the steps run one
    after another, so each checks the branch's ``due_tasks`` XCom itself."""

    def __init__(self, decide_task_id: str) -> None:
        self.decide_task_id = decide_task_id

    def __call__(self, context: Context) -> None:
        from airflow.sdk.exceptions import AirflowSkipException

        ti = context["ti"]
        due = ti.xcom_pull(task_ids=self.decide_task_id, key=DUE_TASKS_XCOM_KEY) or []
        if ti.task_id not in due:
            raise AirflowSkipException(f"{ti.task_id} is not due (see {self.decide_task_id}'s decisions)")


def _safe(part: str) -> str:
    """A path segment from a dag id, task id or run id (``:`` and ``+`` of run ids become ``_``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", part)
