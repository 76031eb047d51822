"""The storage seam: every file the core touches goes through here.

:func:`open_storage` turns a table path or URI (local, ``s3://``/``s3a://``,
``az://``/``abfss://``, ``gs://``, ``file://``) and optional storage options
into a :class:`TableStorage`; :func:`parse_location` gives the canonical
:class:`TableLocation` of any spelling of a table root.
"""

from airflow_delta_provider.delta.storage.location import TableLocation, parse_location
from airflow_delta_provider.delta.storage.options import credential_env, redacted, split_options
from airflow_delta_provider.delta.storage.store import (
    LocalStorage,
    ObjectMeta,
    ObjectStorage,
    TableStorage,
    open_storage,
)

__all__ = [
    "LocalStorage",
    "ObjectMeta",
    "ObjectStorage",
    "TableLocation",
    "TableStorage",
    "credential_env",
    "open_storage",
    "parse_location",
    "redacted",
    "split_options",
]
