"""Which names under a table root are hidden from its readers and from VACUUM.

delta-spark's ``DeltaTableUtils.isHiddenDirectory``: names starting with
``_`` or ``.`` are hidden (and everything below them), except
``_change_data``, ``_delta_index`` and partition folders
``<partition column>=...``; ``_delta_log`` always is. Our writers stage files
in a hidden root folder ``_delta_staging_<uuid>/`` before moving them in.
These are protocol facts that CONVERT, VACUUM, the writers and table
creation all share.
"""

from __future__ import annotations

from collections.abc import Sequence

LOG_DIR = "_delta_log"
#: Root-level folder a writer stages its files in before moving them into the table.
STAGING_PREFIX = "_delta_staging_"
_VISIBLE_UNDERSCORE_PREFIXES = ("_delta_index", "_change_data")


def is_hidden_name(name: str, partition_columns: Sequence[str] = ()) -> bool:
    """delta-spark's ``DeltaTableUtils.isHiddenDirectory`` for one path component."""
    if name == LOG_DIR:
        return True
    if not name.startswith(("_", ".")):
        return False
    if name.startswith(_VISIBLE_UNDERSCORE_PREFIXES):
        return False
    return not any(name.startswith(f"{col}=") for col in partition_columns)


def is_staging_name(name: str, partition_columns: Sequence[str] = ()) -> bool:
    """True for a writer's staging folder name (only meaningful at the table root)."""
    return name.startswith(STAGING_PREFIX) and is_hidden_name(name, partition_columns)


def is_hidden_path(rel_path: str, partition_columns: Sequence[str] = ()) -> bool:
    """True when any component of a relative path is hidden."""
    return any(is_hidden_name(part, partition_columns) for part in rel_path.split("/"))


__all__ = ["LOG_DIR", "STAGING_PREFIX", "is_hidden_name", "is_hidden_path", "is_staging_name"]
