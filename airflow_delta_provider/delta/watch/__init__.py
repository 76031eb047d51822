"""Watching a table for new commits: which ones matter, read once each.

Sensors and triggers are built on this package; it reads ``_delta_log``
through :class:`~airflow_delta_provider.delta.log.version_probe.VersionProbe`
and never a data file.
"""
