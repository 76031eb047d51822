"""Airflow assets of Delta tables.

- :mod:`.uri`: the URI of a table's ``Asset``, the one the writing operators
  emit events for and a watcher's ``Asset`` should carry;
- :mod:`.events`: the asset event a writing operator emits after a commit.
"""

from airflow_delta_provider.assets.uri import table_asset_uri

__all__ = ["table_asset_uri"]
