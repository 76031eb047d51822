"""What maintenance a health report calls for, by thresholds a user can override.

:func:`decide` judges each of the four steps, in the order they run
(:data:`STEPS`), and says for each whether it is due, why, and with which
arguments (each step's arguments are those of its operation's request):

- ``optimize``: a partition holding at least ``min_small_files`` small files
  is compacted, and only such partitions (``where`` names them); on a
  liquid-clustered table, clustering coverage under ``min_clustering_coverage``
  is due too (OPTIMIZE then clusters the files not yet clustered);
- ``reorg``: REORG ... APPLY (PURGE) when deletion vectors hide more than
  ``max_deleted_row_share`` of the rows; it rewrites the files whose vector
  hides more than that share;
- ``vacuum``: when the files removed before the retention (the snapshot's
  tombstones and the ``remove`` actions since the last vacuum) hold at least
  ``min_vacuum_bytes``, or when removed files wait and the last VACUUM is
  older than ``max_days_since_vacuum`` days (or not in the recent history);
  LITE when the log allows it and ``vacuum_lite``;
- ``checkpoint``: when ``max_commits_since_checkpoint`` commits (default: the
  table's ``delta.checkpointInterval``) followed the last checkpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.partition_sql import partitions_condition
from airflow_delta_provider.delta.health.report import HealthReport, PartitionHealth, health_report

if TYPE_CHECKING:
    from airflow_delta_provider.delta.table import DeltaTable

#: The steps, in the order they run.
STEPS = ("optimize", "reorg", "vacuum", "checkpoint")


@dataclass(frozen=True)
class MaintenanceThresholds:
    """When each step is due. The defaults follow delta-spark's own settings."""

    #: A file under this many bytes is small; None: half the target file size
    #: (delta-spark's ``autoCompact.minFileSize`` defaults to half of ``autoCompact.maxFileSize``).
    small_file_size: int | None = None
    #: Compact a partition once it holds this many small files (delta-spark's ``autoCompact.minNumFiles``).
    min_small_files: int = 50
    #: Purge deletion vectors once they hide more than this share of the rows
    #: (delta-spark's ``optimize.maxDeletedRowsRatio``, the share above which OPTIMIZE rewrites a file).
    max_deleted_row_share: float = 0.05
    #: Checkpoint after this many commits since the last checkpoint; None: ``delta.checkpointInterval`` (10).
    max_commits_since_checkpoint: int | None = None
    #: Vacuum once the files removed before the retention hold this many bytes.
    min_vacuum_bytes: int = 1
    #: Vacuum too when removed files wait and the last VACUUM is older than this many days; None: never.
    max_days_since_vacuum: float | None = 7.0
    #: Recluster a liquid-clustered table once fewer than this share of its files are clustered.
    min_clustering_coverage: float = 0.9
    #: Use VACUUM LITE when the log allows it.
    vacuum_lite: bool = True

    def __post_init__(self) -> None:
        for name in ("max_deleted_row_share", "min_clustering_coverage"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidInputError(f"{name} must be a share between 0 and 1, not {value!r}")
        if self.max_days_since_vacuum is not None and self.max_days_since_vacuum < 0:
            raise InvalidInputError(f"max_days_since_vacuum must not be negative, not {self.max_days_since_vacuum!r}")
        for name in ("small_file_size", "min_small_files", "max_commits_since_checkpoint", "min_vacuum_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InvalidInputError(f"{name} must be at least 1, not {value!r}")

    @classmethod
    def of(cls, overrides: Mapping[str, Any] | MaintenanceThresholds | None) -> MaintenanceThresholds:
        """The defaults with ``overrides`` (a mapping of field names) applied; unknown names are refused."""
        if isinstance(overrides, MaintenanceThresholds):
            return overrides
        overrides = dict(overrides or {})
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise InvalidInputError(f"unknown maintenance thresholds {unknown}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, value in overrides.items():
            default = known[name].default
            try:
                if value is None or isinstance(default, bool):
                    values[name] = value if not isinstance(value, str) else value.strip().lower() == "true"
                else:
                    values[name] = (float if isinstance(default, float) else int)(value)
            except (TypeError, ValueError):
                raise InvalidInputError(f"maintenance threshold {name} must be a number, not {value!r}") from None
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Decision:
    """One step: whether it is due, why, and the arguments of its operation."""

    step: str
    due: bool
    reason: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "due": self.due, "reason": self.reason, "arguments": self.arguments}


def decide(report: HealthReport, thresholds: MaintenanceThresholds | None = None) -> list[Decision]:
    """The decision for each of :data:`STEPS`, in that order."""
    t = thresholds or MaintenanceThresholds()
    return [_optimize(report, t), _reorg(report, t), _vacuum(report, t), _checkpoint(report, t)]


def due_steps(decisions: list[Decision]) -> list[str]:
    return [d.step for d in decisions if d.due]


def _optimize(report: HealthReport, t: MaintenanceThresholds) -> Decision:
    crowded = [p for p in report.partitions if p.num_small_files >= t.min_small_files]
    coverage = report.clustering_coverage
    if coverage is not None and coverage < t.min_clustering_coverage:
        return Decision(
            "optimize",
            True,
            f"clustering covers {coverage:.0%} of the files (< {t.min_clustering_coverage:.0%})",
            {"where": None},
        )
    if not crowded:
        most = max((p.num_small_files for p in report.partitions), default=0)
        return Decision("optimize", False, f"at most {most} small files per partition (< {t.min_small_files})", {})
    small = sum(p.num_small_files for p in crowded)
    scope = f"{len(crowded)} of {len(report.partitions)} partitions" if report.partition_columns else "the table"
    return Decision(
        "optimize",
        True,
        f"{small} small files (< {report.small_file_size} bytes) in {scope}",
        {"where": partition_predicate(crowded) if report.partition_columns else None},
    )


def _reorg(report: HealthReport, t: MaintenanceThresholds) -> Decision:
    share = report.deleted_row_share
    limit = f"{t.max_deleted_row_share:.1%}"
    if share <= t.max_deleted_row_share:
        return Decision("reorg", False, f"deletion vectors hide {share:.1%} of the rows (<= {limit})", {})
    return Decision(
        "reorg",
        True,
        f"deletion vectors hide {share:.1%} of the rows (> {limit})",
        {"min_deleted_ratio": t.max_deleted_row_share},
    )


def _vacuum(report: HealthReport, t: MaintenanceThresholds) -> Decision:
    freeable = report.vacuumable_bytes
    mode = "lite" if t.vacuum_lite and report.vacuum_lite_available else "full"
    if freeable >= t.min_vacuum_bytes:
        return Decision("vacuum", True, f"{freeable} bytes of removed files past the retention", {"mode": mode})
    age = report.age_seconds(report.last_vacuum)
    limit = t.max_days_since_vacuum
    # With no VACUUM in the history, the removes counted from the commits are all there
    # is: young ones alone free nothing yet.
    if limit is not None and report.num_pending_removes and age is not None and age > limit * 86400:
        return Decision(
            "vacuum",
            True,
            f"{report.num_pending_removes} removed files wait and the last VACUUM was {age / 86400:.1f} days ago"
            f" (> {limit:g} days)",
            {"mode": mode},
        )
    return Decision("vacuum", False, f"{freeable} bytes to free (< {t.min_vacuum_bytes})", {})


def _checkpoint(report: HealthReport, t: MaintenanceThresholds) -> Decision:
    limit = t.max_commits_since_checkpoint or report.checkpoint_interval
    since = report.commits_since_checkpoint
    if since < limit:
        return Decision("checkpoint", False, f"{since} commits since the last checkpoint (< {limit})", {})
    return Decision("checkpoint", True, f"{since} commits since the last checkpoint (>= {limit})", {})


def partition_predicate(partitions: list[PartitionHealth]) -> str:
    """A SQL condition that holds in exactly these partitions, e.g.
    ``(`day` = '2024-01-01') OR (`day` = '2024-01-02' AND `kind` IS NULL)``
    (:func:`~airflow_delta_provider.delta.expressions.partition_sql.partitions_condition`)."""
    return partitions_condition(p.values for p in partitions)


def assess(
    table: DeltaTable, thresholds: MaintenanceThresholds | None = None, *, now_ms: int | None = None
) -> tuple[HealthReport, list[Decision]]:
    """The decision pass: ``table``'s latest report (small files measured by
    ``thresholds``) and the decisions it leads to."""
    t = thresholds or MaintenanceThresholds()
    report = health_report(table, small_file_size=t.small_file_size, now_ms=now_ms)
    return report, decide(report, t)
