"""Hooks that run one Delta operation and return its commit from ``_delta_log``.

:mod:`.delta_spark` submits it through spark-submit; :mod:`.delta_in_process`
runs it in the task's own process (Spark Connect, or no Spark at all);
:mod:`.delta_operation` holds what both share (the operation token, the
result read back from the log, idempotent retries). Helpers that are not
hooks live in :mod:`airflow_delta_provider.utils`.
"""
