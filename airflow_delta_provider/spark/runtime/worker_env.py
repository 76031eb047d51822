"""Store credentials for the Python workers of ``arrow`` I/O.

In ``arrow`` mode the executors' Python workers open the table's store
themselves (:func:`~airflow_delta_provider.delta.storage.open_storage`), with
each cloud's environment chain (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``). Those
variables must reach the workers, and never through a data-source option, a
plan string or the Spark UI.

A Python worker runs with the environment its Python function carries:
PySpark wraps every function (a ``mapInArrow`` task, a registered data
source) with ``SparkContext.environment``, a dict that starts as the
``spark.executorEnv.*`` settings and that Spark hands to the worker process
as its environment, not as configuration. The driver's ``os.environ`` is not
forwarded by Spark (a worker started by the JVM sees the environment the
driver had when the JVM started, and only on the driver's machine), so
:func:`forward_store_env` copies the driver's current store variables into
``SparkContext.environment`` right before an ``arrow`` job is built:

- a variable ``spark.executorEnv.*`` set explicitly is kept (configuration wins);
- a variable forwarded earlier and since removed from the driver's
  environment is removed again, so a later job never sees stale credentials.

The values travel inside the serialized Python function to the executors,
as ``spark.executorEnv`` values would, but they are not Spark configuration:
they appear in no plan, no ``explain`` output and no UI page.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.storage import credential_env
from airflow_delta_provider.spark.runtime.session import is_connect

#: Attribute on the SparkContext naming the variables this module put there.
_FORWARDED = "_delta_forwarded_store_env"


def forward_store_env(spark: Any, environ: Mapping[str, str] | None = None) -> None:
    """Make the driver's store variables (``environ``, default ``os.environ``)
    the environment of Python functions created from now on.

    A Spark Connect session has no SparkContext here: the server's workers
    keep the server's environment, and nothing is forwarded.
    """
    if is_connect(spark):
        return
    sc = spark.sparkContext
    env: dict[str, str] = sc.environment
    forwarded: set[str] = getattr(sc, _FORWARDED, set())
    current = credential_env(os.environ if environ is None else environ)
    for key in forwarded - current.keys():
        env.pop(key, None)
    now: set[str] = set()
    for key, value in current.items():
        if key in env and key not in forwarded:
            continue  # from spark.executorEnv.*: the configuration wins
        env[key] = value
        now.add(key)
    setattr(sc, _FORWARDED, now)


__all__ = ["forward_store_env"]
