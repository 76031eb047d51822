"""The two histograms a version checksum carries (PROTOCOL.md "File Size
Histogram Schema", "Deleted Record Counts Histogram Schema").

:class:`FileSizeHistogram` counts the live files, and their bytes, per size
bin; its default bins are delta-spark's ``FileSizeHistogramUtils.DEFAULT_BINS``
(powers of two to 4 MB, then finer steps around 128 MB and 1 GB, up to
256 GB). :class:`DeletedRecordCountsHistogram` counts the live files per
decade of rows their deletion vector hides (delta-spark's
``DeletedRecordCountsHistogram``). Both are updated in place, one file at a
time, as delta-spark's incremental checksum does.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_KB = 1024
_MB = 1024 * _KB
_GB = 1024 * _MB

#: delta-spark's ``FileSizeHistogramUtils.DEFAULT_BINS``: each the inclusive start of a bin.
DEFAULT_BINS: tuple[int, ...] = (
    0,
    *(k * _KB for k in (8, 16, 32, 64, 128, 256, 512)),
    *(m * _MB for m in (1, 2, 4)),
    *(m * _MB for m in range(8, 41, 4)),
    *(m * _MB for m in range(48, 121, 8)),
    *(m * _MB for m in range(124, 145, 4)),
    *(m * _MB for m in range(160, 577, 16)),
    *(m * _MB for m in range(640, 1409, 64)),
    *(m * _MB for m in range(1536, 2049, 128)),
    *(m * _MB for m in range(2304, 4097, 256)),
    *(g * _GB for g in (8, 16, 32, 64, 128, 256)),
)

_INT_MAX = 2**31 - 1
#: The lower bound of each bin of :class:`DeletedRecordCountsHistogram`.
_DELETED_BINS: tuple[int, ...] = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, _INT_MAX)


@dataclass
class FileSizeHistogram:
    """Files and bytes per size bin; a size below the first boundary counts nowhere."""

    boundaries: tuple[int, ...] = DEFAULT_BINS
    file_counts: list[int] = field(default_factory=list)
    total_bytes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.file_counts:
            self.file_counts = [0] * len(self.boundaries)
        if not self.total_bytes:
            self.total_bytes = [0] * len(self.boundaries)

    @classmethod
    def of(cls, sizes: Iterable[int], boundaries: tuple[int, ...] = DEFAULT_BINS) -> FileSizeHistogram:
        """The histogram of ``sizes``: sorted once, then cut at each boundary
        (much cheaper than a search per file on a large table)."""
        ordered = sorted(sizes)
        prefix = [0, *itertools.accumulate(ordered)]
        cuts = [bisect.bisect_left(ordered, b) for b in boundaries] + [len(ordered)]
        return cls(
            boundaries,
            [cuts[i + 1] - cuts[i] for i in range(len(boundaries))],
            [prefix[cuts[i + 1]] - prefix[cuts[i]] for i in range(len(boundaries))],
        )

    def _bin(self, size: int) -> int:
        return bisect.bisect_right(self.boundaries, size) - 1

    def insert(self, size: int) -> None:
        i = self._bin(size)
        if i >= 0:
            self.file_counts[i] += 1
            self.total_bytes[i] += size

    def remove(self, size: int) -> None:
        i = self._bin(size)
        if i >= 0:
            self.file_counts[i] -= 1
            self.total_bytes[i] -= size

    def copy(self) -> FileSizeHistogram:
        return FileSizeHistogram(self.boundaries, list(self.file_counts), list(self.total_bytes))

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FileSizeHistogram:
        return cls(tuple(d["sortedBinBoundaries"]), list(d["fileCounts"]), list(d["totalBytes"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "sortedBinBoundaries": list(self.boundaries),
            "fileCounts": list(self.file_counts),
            "totalBytes": list(self.total_bytes),
        }


@dataclass
class DeletedRecordCountsHistogram:
    """Live files per decade of deleted rows: [0], [1, 9], [10, 99], ...,
    [10,000,000, Int.MaxValue - 1], [Int.MaxValue, ∞)."""

    counts: list[int] = field(default_factory=lambda: [0] * len(_DELETED_BINS))

    @classmethod
    def of(cls, cardinalities: Iterable[int]) -> DeletedRecordCountsHistogram:
        h = cls()
        for n in cardinalities:
            h.insert(n)
        return h

    def insert(self, deleted: int) -> None:
        self.counts[bisect.bisect_right(_DELETED_BINS, deleted) - 1] += 1

    def remove(self, deleted: int) -> None:
        self.counts[bisect.bisect_right(_DELETED_BINS, deleted) - 1] -= 1

    def copy(self) -> DeletedRecordCountsHistogram:
        return DeletedRecordCountsHistogram(list(self.counts))

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DeletedRecordCountsHistogram:
        return cls(list(d["deletedRecordCounts"]))

    def to_json(self) -> dict[str, Any]:
        return {"deletedRecordCounts": list(self.counts)}
