"""The Spark engine and the applications that spark-submit runs.

- :mod:`.read`: a snapshot's data files into a DataFrame (the scan, the
  deletion-vector filter, row tracking, the arrow data source) and the
  changes of a version range (:mod:`.read.table_changes`);
- :mod:`.write`: a DataFrame into Delta data files with stats (also through
  the arrow writer), Z-order, generated columns, and the change data
  (``cdc`` files) of UPDATE, DELETE and MERGE;
- :mod:`.runtime`: where the engine runs: sessions (classic and Connect),
  the I/O mode, store settings for the JVM and the Python workers;
- :mod:`.commands`: one application per operation, each a single core
  transaction, with MERGE as a package of its own;
- the ways to run a command: :mod:`.cli` (``python -m
  airflow_delta_provider.spark``, what spark-submit runs), :mod:`.in_process`
  (the same commands in the caller's process, over Spark Connect or with no
  Spark), and what every command returns (:mod:`.result`); :mod:`.conditions`
  checks the user's SQL before any write.

This package imports pyspark and the core, never airflow.
"""
