"""A table's versions as a timeline, and one version in detail, read from the log alone.

:mod:`.entries` turns each commit's ``commitInfo`` into one row (operation,
rows written, changed and deleted, bytes, duration, the engine and the
operation token that names the task instance that wrote it), a bounded page
at a time; :mod:`.detail` describes one version: its ``commitInfo``, the files
it adds and removes, its schema change and the table as of that version.
No data file is read. Airflow's UI plugin (``airflow_delta_provider.ui``) shows both.
"""
