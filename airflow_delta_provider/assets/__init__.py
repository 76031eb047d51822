"""Airflow assets of Delta tables.

- :mod:`.uri`: the URI of a table's ``Asset``, the one the writing operators
  emit events for and a watcher's ``Asset`` should carry;
- :mod:`.events`: the asset event a writing operator emits after a commit;
- :mod:`.consumer`: what a DAG scheduled on a table's asset processes, so
  that no version is missed or processed twice (:func:`version_range`).
"""

from airflow_delta_provider.assets.consumer import (
    VersionRange,
    processed_version,
    record_processed,
    version_range,
)
from airflow_delta_provider.assets.uri import table_asset_uri

__all__ = ["VersionRange", "processed_version", "record_processed", "table_asset_uri", "version_range"]
