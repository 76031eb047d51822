"""A throwaway Airflow for the test session.

Airflow reads ``AIRFLOW_HOME`` and its configuration once, when ``airflow``
is first imported. So this module sets the environment at import time, and
must be imported before anything imports airflow: ``tests/conftest.py``
loads it with ``pytest_plugins = ["tests.airflow_env"]``, and the Airflow-side
test folders' conftests import it too.

It provides the session fixture ``airflow_db`` (a migrated SQLite database)
and the helpers tests use to run DAGs.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="airflow-delta-tests-"))
atexit.register(shutil.rmtree, AIRFLOW_HOME, ignore_errors=True)
(AIRFLOW_HOME / "dags").mkdir()

#: The Spark connection every Airflow-side test uses: local Spark, client mode.
SPARK_DEFAULT_CONNECTION = {
    "conn_type": "spark",
    "host": "local[2]",
    "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"},
}

#: Spark settings that keep one spark-submit small on a two-core machine.
SPARK_TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
}

os.environ.update(
    {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(AIRFLOW_HOME / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(SPARK_DEFAULT_CONNECTION),
    }
)


def migrate_db() -> None:
    """Create the metadata database (what ``airflow db migrate`` does)."""
    from airflow.utils import db

    db.initdb()


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated metadata database in the session's AIRFLOW_HOME."""
    migrate_db()
    return AIRFLOW_HOME


def run_dag(dag: Any, **test_kwargs: Any) -> Any:
    """Run ``dag`` with ``dag.test()`` and return the finished DagRun.

    ``dag.test()`` only runs DAGs the metadata database knows, normally
    through the DAGs folder. A DAG written inside a test is stored the way
    the DAG processor stores a parsed one.
    """
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)
    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )
    return dag.test(**test_kwargs)


def xcom(dag_run: Any, task_id: str, key: str = "return_value") -> Any:
    """The XCom value a task of ``dag_run`` pushed under ``key``."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter_by(dag_id=dag_run.dag_id, run_id=dag_run.run_id, task_id=task_id, key=key)
            .one_or_none()
        )
        return None if row is None else XComModel.deserialize_value(row)


def task_tries(dag_run: Any) -> dict[str, int]:
    """task_id -> how many tries each task instance of ``dag_run`` took."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance).filter_by(dag_id=dag_run.dag_id, run_id=dag_run.run_id)
        return {ti.task_id: ti.try_number for ti in rows}


def task_states(dag_run: Any) -> dict[str, str]:
    """task_id -> final state of every task instance of ``dag_run``."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstance).filter_by(dag_id=dag_run.dag_id, run_id=dag_run.run_id)
        return {ti.task_id: str(ti.state) for ti in rows}


def register_dags(*dags) -> None:
    """Store DAGs as the DAG processor would, so their assets exist."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)
    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(d) for d in dags], {}, None, set(), session=session
        )
