"""Whether a path exists, asked before any engine starts.

An operation that reads a source path (APPEND's, MERGE's) fails in a second
when the path is mistyped, instead of after a Spark job's start. The answer
is three-valued: a path this process cannot judge (a glob Spark expands, a
scheme the core does not know such as ``hdfs://``, a store that refuses this
process's credentials but may accept the cluster's) is left to the engine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError, StorageError
from airflow_delta_provider.delta.storage.location import parse_location
from airflow_delta_provider.delta.storage.store import open_storage

#: Characters of a Hadoop glob pattern: such a path names the files it matches, Spark's to expand.
GLOB_CHARACTERS = frozenset("*?[{")


def path_exists(uri: str, storage_options: Mapping[str, Any] | None = None) -> bool | None:
    """Whether a file or a folder is at ``uri``; None when this process cannot tell."""
    if GLOB_CHARACTERS & set(uri):
        return None
    try:
        location = parse_location(uri)
    except InvalidInputError:
        return None
    if location.is_local:
        return os.path.exists(location.path)
    try:
        folders, files = open_storage(location, storage_options).list_top("")
        if folders or files or not location.path:
            return True  # a folder (a key prefix), or a bucket that lists
        return open_storage(location.parent(), storage_options).exists(location.name)
    except StorageError:
        return None


__all__ = ["GLOB_CHARACTERS", "path_exists"]
