"""Delta pages inside Airflow 3's UI: the provider's plugin (:mod:`.plugin`).

- :mod:`.tables`: which tables this deployment's tasks touched (their asset
  events and XComs) or an administrator listed, and who may see each;
- :mod:`.reads`: the reads on the api-server, through the core only (no Spark,
  no JVM), with a connection's credentials and caches per (table, version);
- :mod:`.render`: the pages, as server-rendered HTML with no script;
- :mod:`.app`: the FastAPI app (pages and JSON API) behind Airflow's own
  authentication and its auth manager's DAG permissions.
"""
