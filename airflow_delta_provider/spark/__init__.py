"""The Spark engine and the applications that spark-submit runs.

``scan`` turns a snapshot into a DataFrame, ``write`` turns a DataFrame into
Delta data files with stats, and ``commands`` holds one application per
operation, each a single core transaction. ``python -m
airflow_delta_provider.spark`` is the command line (see :mod:`.cli`).

This package imports pyspark and the core, never airflow.
"""
