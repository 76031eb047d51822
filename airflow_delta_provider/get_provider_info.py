"""Provider metadata that Airflow's ``ProvidersManager`` reads through the
``apache_airflow_provider`` entry point.

This module imports nothing from Airflow or the package: discovery loads it in
every Airflow process, so it must stay a plain function over literals.
tests/test_get_provider_info.py checks the literals against the package: every
module that defines an operator, sensor, hook, trigger or extra link, and every
hook's connection type, must be listed here.
"""

from __future__ import annotations

from typing import Any

_INTEGRATION = "Delta Lake"


def get_provider_info() -> dict[str, Any]:
    """Describe the provider: its modules, its connection type and its version."""
    from airflow_delta_provider import __version__

    return {
        # Must equal the canonicalised distribution name, or discovery refuses it.
        "package-name": "airflow-delta-provider",
        "name": "Delta Lake",
        "description": (
            "Run Delta Lake operations from DAGs on plain Apache Spark (spark-submit or Spark Connect): "
            "UPDATE, DELETE, APPEND (and overwrite), MERGE, OPTIMIZE (compaction, Z-order), ALTER TABLE, "
            "RESTORE, CHECKPOINT, VACUUM, REORG (purge of deletion vectors), CHANGES (the change data "
            "feed of a version range, to a folder), CONVERT (TO DELTA: a Parquet folder in place) and "
            "GENERATE (symlink manifests for Presto, Trino and Athena), CLONE (shallow: a new table over another's files) "
            "and REGISTER (a table's entry in a catalog); "
            "CHECKPOINT, VACUUM, ALTER, RESTORE, CONVERT, GENERATE, CLONE and REGISTER also with no Spark at all. DESCRIBE DETAIL and history as tasks, with no Spark, for DAGs to branch on. "
            "A table health report and a maintenance autopilot that runs only the upkeep that is due. "
            "Delta pages in Airflow's UI: each table's versions, linked to the task instances that wrote them. "
            "Sensors and triggers wait for new table versions and partitions. "
            "Tables by name in Unity Catalog (with its vended credentials), AWS Glue or a Hive Metastore. "
            "No Databricks, no Delta jar."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://docs.delta.io/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_delta_provider.operators.delta",
                    "airflow_delta_provider.operators.table_info",
                    "airflow_delta_provider.operators.maintenance",
                ],
            }
        ],
        "extra-links": [
            "airflow_delta_provider.operators.maintenance.DeltaHealthReportLink",
            "airflow_delta_provider.operators.version_link.DeltaVersionLink",
        ],
        # Also the airflow.plugins entry point (setup.cfg), which Airflow reads with lazy provider discovery.
        "plugins": [{"name": "delta", "plugin-class": "airflow_delta_provider.ui.plugin.DeltaUIPlugin"}],
        "sensors": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["airflow_delta_provider.sensors.delta_table"],
            }
        ],
        "hooks": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": [
                    "airflow_delta_provider.hooks.delta_spark",
                    "airflow_delta_provider.hooks.delta_in_process",
                    "airflow_delta_provider.hooks.delta_catalog",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["airflow_delta_provider.triggers.delta_table"],
            }
        ],
        # Connections of type "spark" stay the apache-spark provider's; this
        # type only names the hook, and the hook reads it like a "spark" one.
        "connection-types": [
            {
                "connection-type": "delta_spark",
                "hook-class-name": "airflow_delta_provider.hooks.delta_spark.DeltaSparkHook",
                "hook-name": "Delta Lake on Spark",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login", "password"],
                    "relabeling": {"host": "Master"},
                    "placeholders": {"host": "local[*], spark://host:7077, yarn or k8s://https://host"},
                },
            },
            {
                "connection-type": "unity_catalog",
                "hook-class-name": "airflow_delta_provider.hooks.delta_catalog.DeltaCatalogHook",
                "hook-name": "Unity Catalog (Delta Lake tables by name)",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login", "port", "extra"],
                    "relabeling": {"host": "Server URL", "password": "Token"},
                    "placeholders": {"host": "http://localhost:8080 or https://<workspace>.cloud.databricks.com"},
                },
            },
        ],
    }
