"""The MERGE's rewrite: the touched files' rows after the clauses, and the inserts, written.

An insert-only MERGE appends the source rows matching none of the
candidates and rewrites nothing. Otherwise the touched files are rewritten
(a left join to the source) and the unmatched source rows inserted (an
anti-join to the matched keys, for an equi-join; else one full outer join).
On a table with deletion vectors, touched files are rewritten whole
(copy-on-write); the commit removes them, vectors included.

The rows written must add up (copied + updated + inserted) before anything
is committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from airflow_delta_provider.delta.actions.model import AddCDCFile, AddFile
from airflow_delta_provider.delta.errors import DeltaError
from airflow_delta_provider.operations.merge.changes import record_changes
from airflow_delta_provider.operations.merge.clauses import (
    DELETE,
    MATCHED,
    NOT_MATCHED_BY_SOURCE,
    UPDATE,
)
from airflow_delta_provider.operations.merge.files import Written, write_rows
from airflow_delta_provider.operations.merge.frames import (
    inserts,
    rewrite_deleting,
    rewrite_matched,
    rewrite_with_inserts,
)
from airflow_delta_provider.operations.merge.prepare import MergePlan
from airflow_delta_provider.operations.merge.rows import MergeRows
from airflow_delta_provider.operations.merge.touched import Touched
from airflow_delta_provider.spark.write.files import WrittenFiles


@dataclass(frozen=True)
class Rewritten:
    """What the rewrite wrote, and the counts the commit reports."""

    #: Target rows per index of the clause that acts on them (from :class:`~.touched.Touched`).
    counts: Mapping[int, int] = field(default_factory=dict)
    removed: tuple[AddFile, ...] = ()
    added: tuple[AddFile, ...] = ()
    changes: tuple[AddCDCFile, ...] = ()
    rows_copied: int = 0
    inserted: int = 0
    scan_ms: int = 0
    rewrite_ms: int = 0


def clause_counts(rows: MergeRows, counts: Mapping[int, int]) -> dict[str, int]:
    """The target rows updated and deleted, by matched and not-matched-by-source clauses."""

    def total(when: str, action: str) -> int:
        return sum(counts.get(i, 0) for i in rows.indexes(when=when, action=action))

    return {
        "matched_updated": total(MATCHED, UPDATE),
        "matched_deleted": total(MATCHED, DELETE),
        "source_updated": total(NOT_MATCHED_BY_SOURCE, UPDATE),
        "source_deleted": total(NOT_MATCHED_BY_SOURCE, DELETE),
    }


def rewrite(plan: MergePlan, touched: Touched, ledger: WrittenFiles) -> Rewritten:
    """Write what the MERGE changes: the touched files' rows after the
    clauses and the inserted rows (and their change data); every file
    written is also added to ``ledger``. Commits nothing."""
    scan_ms = plan.candidates.scan_ms + touched.scan_ms
    if plan.insert_only:
        appended = _write(plan, inserts(plan, plan.candidates.files, None), ledger)
        return _settled(plan, touched.counts, (), [appended], scan_ms)
    if not touched.touched and not plan.inserts:
        return Rewritten(counts=touched.counts, scan_ms=scan_ms)
    by_path = {f.path: f for f in plan.candidates.files}
    rewritten = [by_path[p] for p in sorted(touched.touched)]
    with_matches = [by_path[p] for p in sorted(touched.with_matches)]
    out: DataFrame | None
    if touched.deleting_duplicates:
        out = rewrite_deleting(plan, rewritten, with_matches, touched.matched_keys)
    elif plan.inserts and not plan.facts.equi_join:
        spectators = [by_path[p] for p in sorted(touched.with_matches - touched.touched)]
        out = rewrite_with_inserts(plan, rewritten, spectators)
    else:
        out = rewrite_matched(plan, rewritten)
        if plan.inserts:
            new = inserts(plan, with_matches, touched.matched_keys)
            out = new if out is None else out.unionByName(new)
    written: list[Written] = []
    if out is not None:
        written.append(_write(plan, out, ledger))
    if rewritten and plan.records_changes:
        written.append(
            record_changes(plan, rewritten, with_matches, touched.deleting_duplicates, touched.matched_keys, ledger)
        )
    return _settled(plan, touched.counts, tuple(rewritten), written, scan_ms)


def _write(plan: MergePlan, frame: DataFrame, ledger: WrittenFiles) -> Written:
    """Write ``frame`` (from :mod:`.frames`) as the table's files, its derived columns filled in."""
    return write_rows(plan.target, plan.rows.derive(frame), plan.schema, plan.metadata, ledger)


def _settled(
    plan: MergePlan,
    counts: Mapping[int, int],
    removed: tuple[AddFile, ...],
    written: Sequence[Written],
    scan_ms: int,
) -> Rewritten:
    """The rewrite, with the rows copied and inserted, from the rows
    written: the files removed held the copied rows and those updated or
    deleted; every row written is a copy, an update or an insert. A source
    that changed under the MERGE (it is read more than once), or a bug,
    shows as counts that cannot be, and fails before the commit."""
    added = tuple(f for w in written for f in w.adds)
    c = clause_counts(plan.rows, counts)
    rows_written = sum(f.num_records or 0 for f in added)
    rows_copied = (plan.target.row_count(removed) if removed else 0) - sum(c.values())
    inserted = rows_written - rows_copied - c["matched_updated"] - c["source_updated"]
    source_rows = plan.candidates.source_rows
    most = source_rows if plan.inserts else 0
    if rows_copied < 0 or not 0 <= inserted <= most or any(f.num_records is None for f in added):
        raise DeltaError(
            f"MERGE into {plan.table_uri} wrote {rows_written} rows, which do not add up: {rows_copied} kept, "
            f"{inserted} inserted of {source_rows} source rows. Did the source change while the "
            "MERGE read it? Nothing was committed"
        )
    return Rewritten(
        counts=counts,
        removed=removed,
        added=added,
        changes=tuple(ch for w in written for ch in w.changes),
        rows_copied=rows_copied,
        inserted=inserted,
        scan_ms=scan_ms,
        rewrite_ms=sum(w.ms for w in written),
    )


__all__ = ["Rewritten", "clause_counts", "rewrite"]
