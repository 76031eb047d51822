"""Helpers of the Airflow layer that are not hooks: the package zip for ``--py-files``, and store credentials from Airflow connections."""
