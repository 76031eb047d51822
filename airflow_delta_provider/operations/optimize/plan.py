"""OPTIMIZE planning: which files are rewritten together (bin-packing).

As delta-spark's ``OptimizeExecutor`` and delta-rs's ``optimize``, files are
grouped per partition:

- **compaction**: the files smaller than the target size, smallest first, are
  packed greedily into bins of at most the target size; a bin of one file
  gains nothing and is left out;
- **Z-order**: every file of a partition is one bin (the rewrite sorts them
  all), a partition of one file included.

The target size is the caller's, else ``delta.targetFileSize``, else
:data:`DEFAULT_TARGET_FILE_SIZE` (128 MiB). Planning reads the log only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from airflow_delta_provider.delta.actions.model import AddFile


@dataclass
class Bin:
    """Files of one partition rewritten together."""

    partition_values: dict[str, str | None]
    files: list[AddFile] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def plan_bins(files: Iterable[AddFile], target_size: int, zorder: bool = False) -> list[Bin]:
    """The bins to rewrite, in a stable order (by partition, then by size)."""
    by_partition: dict[str, list[AddFile]] = {}
    for f in files:
        by_partition.setdefault(json.dumps(f.partition_values, sort_keys=True), []).append(f)
    bins: list[Bin] = []
    for key in sorted(by_partition):
        members = by_partition[key]
        values = dict(members[0].partition_values)
        if zorder:
            bins.append(Bin(values, sorted(members, key=lambda f: f.path)))
            continue
        small = sorted((f for f in members if f.size < target_size), key=lambda f: (f.size, f.path))
        current = Bin(values)
        for f in small:
            if current.files and current.size + f.size > target_size:
                bins.append(current)
                current = Bin(values)
            current.files.append(f)
        bins.append(current)
    return [b for b in bins if len(b.files) > 1 or (zorder and b.files)]


__all__ = ["Bin", "plan_bins"]
