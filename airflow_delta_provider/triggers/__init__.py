"""Triggers that watch a Delta table's ``_delta_log`` from Airflow's triggerer.

Importing this package is cheap: the log is read through the core, which is
imported only when a trigger runs.
"""
