"""MERGE: upsert a source into a table, as delta-spark's ``MergeIntoCommand`` does.

The clause language is :mod:`~airflow_delta_provider.delta.merge_clauses`;
what each joined row becomes is :mod:`~airflow_delta_provider.spark.merge_rows`.
The command runs in these steps, each as cheap as the clauses allow:

1. **Prepare** (no data job): the snapshot and a transaction; the source's
   schema against the table's (``*`` clauses need a source that fits, or
   ``merge_schema``, which adds its new columns); every expression analysed.
2. **Source facts**: one aggregation over the source counts its rows and
   takes the min and max of each join key (``t.k = s.k``). With the
   join condition's target-only conjuncts, they prune the target's files
   by partition values and stats (:mod:`~airflow_delta_provider.delta.merge_condition`).
   A ``not_matched_by_source`` clause needs every target row, so it turns
   pruning off.
3. **Insert-only** MERGE: the source rows with no match among the
   candidate files (a left-anti join) are appended. Nothing is rewritten.
4. Otherwise **find touched files**: one job joins the candidates' rows
   (only the columns the join and conditions read) to the source and counts,
   per file and per clause, the rows each clause acts on. A target row
   matched by two source rows is an error naming its key (delta-spark's
   rule), unless every ``matched`` clause deletes.
5. **Rewrite** the touched files only, with one outer join to the source
   that also yields the inserts. Files holding matched rows that no clause
   changes join too, so that their matches are not inserted, but are not
   rewritten.
6. **Commit** removes and adds (and the evolved schema) as one version.
   The rows written are checked against the counts of step 4.

A MERGE that inserts reads at ``Serializable``: a concurrent append into
the key range it read is a conflict (the append could hold a key the MERGE
would insert again). One that only updates and deletes reads at
``WriteSerializable``, so concurrent blind appends land. A concurrent
change to a file MERGE read is a conflict either way.

On a table with deletion vectors, touched files are rewritten whole
(copy-on-write); the commit removes them, vectors included.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta import column_mapping, config, type_widening
from airflow_delta_provider.delta.actions import AddFile
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    DeltaError,
    InvalidInputError,
    MultipleSourceMatchesError,
    SchemaMismatchError,
)
from airflow_delta_provider.delta.merge_clauses import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    UPDATE,
    MergeClause,
    operation_parameters,
    parse_clauses,
)
from airflow_delta_provider.delta.merge_condition import JoinFacts, check_alias, join_facts, key_range_sql
from airflow_delta_provider.delta.schema import (
    check_column_names,
    merge_schemas,
    schema_string,
    type_name,
)
from airflow_delta_provider.spark.commands.dml import DmlCommand, elapsed_ms, now_ms
from airflow_delta_provider.spark.io_mode import resolve_io
from airflow_delta_provider.spark.merge_rows import COPY, SKIP, MergeRows

#: Key types whose min/max bound a column exactly, by kind (source and target must share one).
_KEY_KINDS = {
    "byte": "integral",
    "short": "integral",
    "integer": "integral",
    "long": "integral",
    "date": "date",
    "string": "string",
}
#: How many key columns a multiple-match error shows.
_KEYS_SHOWN = 5


class MergeCommand(DmlCommand):
    """One MERGE of a source into a table, as one core transaction."""

    operation = "MERGE"

    def __init__(
        self,
        spark: SparkSession,
        table: str,
        source: str,
        on: str,
        clauses: str | Sequence[Mapping[str, Any]],
        *,
        source_format: str = "parquet",
        source_version: int | None = None,
        source_options: Mapping[str, str] | None = None,
        target_alias: str = "t",
        source_alias: str = "s",
        merge_schema: bool = False,
        token: str | None = None,
        io: str = "auto",
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(spark, table, None, token, io, storage_options)
        if not on or not on.strip():
            raise InvalidInputError("MERGE needs a join condition (on), e.g. t.id = s.id")
        if source_version is not None and source_format != "delta":
            raise InvalidInputError(f"a source version needs a delta source, not {source_format}")
        if check_alias(target_alias, "target").lower() == check_alias(source_alias, "source").lower():
            raise InvalidInputError(f"the target and source aliases must differ, both are {target_alias!r}")
        self.on = on
        self.clauses: tuple[MergeClause, ...] = parse_clauses(clauses)
        self.source_uri = source
        self.source_format = source_format
        self.source_version = source_version
        self.source_options = dict(source_options or {})
        self.target_alias = target_alias
        self.source_alias = source_alias
        self.merge_schema = merge_schema
        self.storage_options = storage_options
        self.metadata: Any = None  # the evolved metadata, when * clauses add columns
        self.schema: dict[str, Any] = {}
        self.source: Any = None
        self.rows: Any = None
        self.facts: JoinFacts | None = None
        self.counts: Counter[int] = Counter()  # rows per clause index (COPY: target rows kept in touched files)
        self.source_rows = 0
        self.inserted = 0
        self._deleting_duplicates = False

    @property
    def parameters(self) -> dict[str, Any]:
        return operation_parameters(self.on, self.clauses)

    def _has(self, *, when: str | None = None, action: str | None = None) -> bool:
        return any((when is None or c.when == when) and (action is None or c.action == action) for c in self.clauses)

    # --- step 1 -------------------------------------------------------------

    def prepare(self) -> None:
        from airflow_delta_provider.spark.commands.append import read_source

        self._started = time.monotonic()
        requested_io = self.io  # the source is placed by itself
        self.io = resolve_io(self.spark, self.table.storage.location, self.io)
        self.snapshot = snap = self.table.snapshot()
        inserts = self._has(action=INSERT)
        self.txn = self.table.transaction(
            self.operation,
            parameters=self.parameters,
            snapshot=snap,
            isolation_level="Serializable" if inserts else "WriteSerializable",
        )
        if config.append_only(snap.metadata) and any(c.action != INSERT for c in self.clauses):
            raise AppendOnlyViolationError(
                f"MERGE with update or delete clauses is not allowed: table {self.table_uri} is append-only "
                "(delta.appendOnly=true); only not_matched insert clauses are"
            )
        self.source = read_source(
            self.spark,
            self.source_uri,
            self.source_format,
            self.source_options,
            io=requested_io,
            storage_options=self.storage_options,
            version=self.source_version,
        )
        source_schema = type_widening.strip(column_mapping.strip(self.source.schema.jsonValue()))
        self._plan_schema(source_schema)
        target_columns = [f["name"] for f in snap.schema["fields"]]
        self.rows = MergeRows(
            self.spark,
            self.clauses,
            self.on,
            self.schema,
            target_columns,
            self.source.schema,
            self.target_alias,
            self.source_alias,
        )
        self.rows.validate()
        self.facts = join_facts(
            self.on, self.target_alias, self.source_alias, target_columns, [f.name for f in self.source.schema.fields]
        )
        self.predicate = self._source_facts()
        self.candidates = self._candidates()
        if self.predicate is None:
            self.txn.read_whole_table()
        else:
            self.txn.read_predicate(self.predicate)
        self.txn.read_files(self.candidates)

    def _plan_schema(self, source_schema: dict[str, Any]) -> None:
        """The schema the MERGE writes: the table's, or with ``merge_schema``
        and a ``*`` clause, the table's merged with the source's (delta-spark's
        schema evolution). Without ``merge_schema``, a ``*`` clause needs a
        source with no column the table lacks, and types that merge into the
        table's without changing them (an int source into a long column)."""
        snap = self.snapshot
        self.schema = snap.schema
        if not any(c.is_star for c in self.clauses):
            return
        previous = snap.metadata
        widen = self.merge_schema and config.type_widening_enabled(previous)
        merged = merge_schemas(snap.schema, _fitted(snap.schema, source_schema), type_widening=widen)
        if merged == snap.schema:
            return
        if not self.merge_schema:
            known = {f["name"].lower() for f in snap.schema["fields"]}
            new = [f["name"] for f in source_schema["fields"] if f["name"].lower() not in known]
            what = f"columns the table lacks: {new}" if new else "nested fields the table lacks"
            raise SchemaMismatchError(
                f"the MERGE source has {what}; a * clause would write them. Pass merge_schema to add them "
                "to the table, or name the columns to set in the clause"
            )
        type_widening.check_partition_changes(snap.schema, merged, snap.partition_columns)
        if column_mapping.mode_of(previous.configuration) == column_mapping.NONE:
            check_column_names(source_schema)
        self.metadata = column_mapping.apply(replace(previous, schema_string=schema_string(merged)), previous)
        self.schema = self.metadata.schema_json

    # --- step 2 -------------------------------------------------------------

    def _source_facts(self) -> Any:
        """Count the source's rows and, when pruning may use them, the range
        of each join key; the pruning predicate (None: read every file)."""
        from airflow_delta_provider.delta.skipping import Predicate

        assert self.facts is not None
        start = time.monotonic()
        pairs = [] if self._has(when=NOT_MATCHED_BY_SOURCE) else self._range_pairs()
        aggs = [F.count(F.lit(1)).alias("n")]
        for j, (_target, source) in enumerate(pairs):
            ref = F.col(f"`{source}`")
            aggs += [F.min(ref).alias(f"lo{j}"), F.max(ref).alias(f"hi{j}")]
        row = self.source.agg(*aggs).collect()[0]
        self.result.scan_ms += elapsed_ms(start)
        self.source_rows = int(row["n"])
        if self._has(when=NOT_MATCHED_BY_SOURCE):
            return None
        parts = [self.facts.target_filter] if self.facts.target_filter else []
        for j, (target, _source) in enumerate(pairs):
            sql = key_range_sql(target, row[f"lo{j}"], row[f"hi{j}"])
            if sql is not None:
                parts.append(sql)
        if not parts:
            return None
        try:
            return Predicate.parse(" AND ".join(f"({p})" for p in parts))
        except InvalidInputError:
            return None

    def _range_pairs(self) -> list[tuple[str, str]]:
        """The join's key pairs whose source min/max bound the target column exactly."""
        assert self.facts is not None
        target_types = {f["name"]: f["type"] for f in self.snapshot.schema["fields"]}
        source_types = {f.name: f.dataType.typeName() for f in self.source.schema.fields}
        out = []
        for target, source in self.facts.key_pairs:
            t = _KEY_KINDS.get(type_name(target_types[target]) if isinstance(target_types[target], str) else "")
            s = _KEY_KINDS.get(source_types[source])
            if t is not None and t == s:
                out.append((target, source))
        return out

    def _candidates(self) -> list[AddFile]:
        if not self.source_rows and not self._has(when=NOT_MATCHED_BY_SOURCE):
            return []  # an empty source matches nothing
        return self._prune()

    # --- steps 3 to 5 -------------------------------------------------------

    def rewrite(self) -> None:
        if all(c.when == NOT_MATCHED for c in self.clauses):
            adds = self.write(self._inserts(self.rows.source(self.source)))
            self.inserted = sum(f.num_records or 0 for f in adds)
            return
        touched, matched = self._find_touched_files()
        if not touched and not self.inserted:
            return
        by_path = {f.path: f for f in self.candidates}
        rewritten = [by_path[p] for p in sorted(touched)]
        if self._deleting_duplicates:
            out = self._rewrite_deleting(rewritten, [by_path[p] for p in sorted(matched)])
        else:
            out = self._rewrite(rewritten, [by_path[p] for p in sorted(matched - touched)])
        self.result.removed = rewritten
        self.write(out)
        self._check_written()

    def _rewrite(self, rewritten: list[AddFile], spectators: list[AddFile]) -> DataFrame:
        """The rows of the rewritten files after the clauses, and the inserts,
        from one outer join. The ``spectators`` (files with matched rows no
        clause changes) join too when the MERGE inserts, so that their
        matches are not taken for unmatched source rows; their rows are not
        written."""
        rows = self.rows
        inserts = self._has(action=INSERT)
        source = rows.source(self.source)
        target = self._target_rows(rewritten, spectators if inserts else [])
        if target is None:
            return self._inserts(source, matched_files=[])
        joined = rows.join(target, source, rows.join_type(targets=True, sources=inserts))
        action = F.col(rows.action_column)
        joined = joined.withColumn(rows.action_column, rows.action())
        written = F.col(rows.target_marker).isNull() | F.col(rows.target_marker)
        return joined.filter(~rows.drops(action) & written).select(*rows.output_columns(action))

    def _rewrite_deleting(self, rewritten: list[AddFile], matched: list[AddFile]) -> DataFrame:
        """:meth:`_rewrite` when target rows are matched by several source
        rows and every matched clause deletes: a row goes when any of its
        matches meets a delete condition (an anti join), so that no row is
        written twice."""
        rows = self.rows
        source = rows.source(self.source)
        conditions = [c.condition for c in self.clauses if c.when == MATCHED]
        deleting = self.on
        if conditions and None not in conditions:
            deleting = f"({self.on}) AND (" + " OR ".join(f"({c})" for c in conditions) + ")"
        target = rows.target(self.scan(rewritten))
        survivors = rows.join(target, source, "left_anti", on=deleting).alias(self.target_alias)
        out = survivors.select(*rows.target_columns_out())
        if self._has(when=NOT_MATCHED_BY_SOURCE):
            kept = rows.join(survivors, source, "left_semi").alias(self.target_alias)
            unmatched = rows.join(survivors, source, "left_anti").alias(self.target_alias)
            action = F.col(rows.action_column)
            unmatched = unmatched.withColumn(rows.action_column, rows.cascade(NOT_MATCHED_BY_SOURCE))
            changed = unmatched.filter(~rows.drops(action)).select(*rows.output_columns(action, source_side=False))
            out = kept.select(*rows.target_columns_out()).unionByName(changed)
        if self._has(action=INSERT):
            out = out.unionByName(self._inserts(source, matched_files=matched))
        return out

    def _target_rows(self, rewritten: list[AddFile], spectators: list[AddFile]) -> DataFrame | None:
        """The rows of the files to rewrite (marker true) and of the files
        only joined (marker false), under the target alias; None for none."""
        rows = self.rows
        frames = []
        for files, marker in ((rewritten, True), (spectators, False)):
            if files:
                frames.append(rows.target(self.scan(files)).withColumn(rows.target_marker, F.lit(marker)))
        if not frames:
            return None
        out = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        return out.alias(self.target_alias)

    def _inserts(self, source: DataFrame, matched_files: list[AddFile] | None = None) -> DataFrame:
        """The source rows that match no row of ``matched_files`` (default:
        the candidates), each as the first ``not_matched`` clause inserts it."""
        rows = self.rows
        files = self.candidates if matched_files is None else matched_files
        if files:
            target = rows.target(self.scan(files))
            source = source.join(target, F.expr(self.on), "left_anti").alias(self.source_alias)
        action = F.col(rows.action_column)
        source = source.withColumn(rows.action_column, rows.cascade(NOT_MATCHED))
        return source.filter(~rows.drops(action)).select(*rows.output_columns(action, target_side=False))

    def _find_touched_files(self) -> tuple[set[str], set[str]]:
        """One job over the candidates joined to the source: per file and
        clause, the rows each clause acts on. Returns the touched files
        (a clause updates or deletes a row) and the files holding a matched
        row; sets :attr:`counts` and :attr:`inserted`."""
        from airflow_delta_provider.spark.scan import match_frame

        rows = self.rows
        if not self.candidates:
            self.inserted = self.source_rows if self._has(action=INSERT) else 0
            self._count_unmatched_inserts()
            return set(), set()
        start = time.monotonic()
        frame, key, row, by_key = match_frame(self.spark, self.snapshot, self.candidates, None, self.io, with_data=True)
        inserts = self._has(action=INSERT)
        joined = rows.join(
            rows.target(frame),
            rows.source(self.source),
            rows.join_type(targets=self._has(when=NOT_MATCHED_BY_SOURCE), sources=inserts),
        )
        action = rows.action()
        acting = rows.is_matched & (action != COPY)
        per_row = joined.groupBy(
            F.col(f"`{key}`").alias("k"), F.col(f"`{row}`").alias("r"), F.when(~rows.is_target_row, action).alias("a0")
        ).agg(
            F.count(F.lit(1)).alias("n"),
            F.max(action).alias("a"),
            F.sum(rows.is_matched.cast("long")).alias("m"),
            F.sum(acting.cast("long")).alias("am"),
        )
        per_file = per_row.groupBy("k", "a").agg(
            F.sum(F.when(F.col("k").isNull(), F.col("n")).otherwise(F.lit(1))).alias("n"),
            F.max("m").alias("m"),
            F.max("am").alias("am"),
        )
        found = per_file.collect()
        self.result.scan_ms += elapsed_ms(start)

        touched: set[str] = set()
        matched: set[str] = set()
        changing = set(rows.indexes(action=UPDATE)) | set(rows.indexes(action=DELETE))
        duplicated = False
        for r in found:
            if r["k"] is None:
                if r["a"] != SKIP:
                    self.counts[r["a"]] += int(r["n"])
                    self.inserted += int(r["n"])
                continue
            path = by_key[r["k"]]
            self.counts[r["a"]] += int(r["n"])
            if r["a"] in changing:
                touched.add(path)
            if (r["m"] or 0) >= 1:
                matched.add(path)
            if (r["am"] or 0) > 1:
                duplicated = True
        if duplicated and not self._only_deletes_match():
            self._raise_multiple_matches(joined, key, row)
        self._deleting_duplicates = duplicated
        return touched, matched

    def _count_unmatched_inserts(self) -> None:
        """With no candidate file, every source row is unmatched: count per insert clause."""
        if not self.inserted:
            return
        rows = self.rows
        found = rows.source(self.source).groupBy(rows.cascade(NOT_MATCHED).alias("a")).count().collect()
        self.inserted = 0
        for r in found:
            if r["a"] != SKIP:
                self.counts[r["a"]] += int(r["count"])
                self.inserted += int(r["count"])

    def _only_deletes_match(self) -> bool:
        return all(c.action == DELETE for c in self.clauses if c.when == MATCHED)

    def _raise_multiple_matches(self, joined: DataFrame, key: str, row: str) -> None:
        """Name one target row (by the target columns of the join) matched by more than one source row."""
        assert self.facts is not None
        rows = self.rows
        shown = list(self.facts.target_columns[:_KEYS_SHOWN])
        action = rows.action()
        example = (
            joined.filter(rows.is_matched & (action != COPY))
            .groupBy(F.col(f"`{key}`"), F.col(f"`{row}`"))
            .agg(F.count(F.lit(1)).alias("_n"), *[F.first(rows.target_value(c)).alias(c) for c in shown])
            .filter(F.col("_n") > 1)
            .limit(1)
            .collect()
        )
        described = ", ".join(f"{c}={example[0][c]!r}" for c in shown) if example and shown else "key not shown"
        count = example[0]["_n"] if example else "several"
        raise MultipleSourceMatchesError(
            f"MERGE into {self.table_uri}: the target row ({described}) is matched by {count} source rows, "
            "and a target row may be updated or deleted by one source row only (unless every matched clause "
            "deletes); deduplicate the source on the join keys"
        )

    # --- writing and committing ---------------------------------------------

    def write(self, frame: DataFrame) -> list[AddFile]:
        from airflow_delta_provider.spark.write import write_files

        snap = self.snapshot
        md = self.metadata or snap.metadata
        start = time.monotonic()
        try:
            adds = write_files(
                frame, snap, self.schema, snap.partition_columns, configuration=dict(md.configuration), io=self.io
            )
        finally:
            self.result.rewrite_ms += elapsed_ms(start)
        self.result.added.extend(adds)
        return adds

    def _row_counts(self) -> dict[str, int]:
        rows, counts = self.rows, self.counts

        def total(when: str, action: str) -> int:
            return sum(counts[i] for i in rows.indexes(when=when, action=action))

        return {
            "matched_updated": total(MATCHED, UPDATE),
            "matched_deleted": total(MATCHED, DELETE),
            "source_updated": total(NOT_MATCHED_BY_SOURCE, UPDATE),
            "source_deleted": total(NOT_MATCHED_BY_SOURCE, DELETE),
        }

    def metrics(self) -> dict[str, int]:
        """delta-spark's MERGE metrics."""
        r = self.result
        c = self._row_counts()
        updated = c["matched_updated"] + c["source_updated"]
        deleted = c["matched_deleted"] + c["source_deleted"]
        return {
            "numSourceRows": self.source_rows,
            "numTargetRowsInserted": self.inserted,
            "numTargetRowsUpdated": updated,
            "numTargetRowsMatchedUpdated": c["matched_updated"],
            "numTargetRowsNotMatchedBySourceUpdated": c["source_updated"],
            "numTargetRowsDeleted": deleted,
            "numTargetRowsMatchedDeleted": c["matched_deleted"],
            "numTargetRowsNotMatchedBySourceDeleted": c["source_deleted"],
            "numTargetRowsCopied": r.rows_copied,
            "numOutputRows": sum(f.num_records or 0 for f in r.added),
            "numTargetFilesAdded": len(r.added),
            "numTargetFilesRemoved": len(r.removed),
            "numTargetChangeFilesAdded": 0,
            "numTargetBytesAdded": sum(f.size for f in r.added),
            "numTargetBytesRemoved": sum(f.size for f in r.removed),
            "executionTimeMs": elapsed_ms(self._started),
            "scanTimeMs": r.scan_ms,
            "rewriteTimeMs": r.rewrite_ms,
        }

    def _check_written(self) -> None:
        """The rows written must be the rows kept, updated and inserted: a
        second reading of a source that changed under the MERGE (or a bug)
        fails here, before the commit."""
        r = self.result
        c = self._row_counts()
        live = self.row_count(r.removed) if r.removed else 0
        r.rows_copied = live - sum(c.values())
        expected = r.rows_copied + c["matched_updated"] + c["source_updated"] + self.inserted
        written = sum(f.num_records or 0 for f in r.added)
        if r.rows_copied < 0 or (written != expected and all(f.num_records is not None for f in r.added)):
            raise DeltaError(
                f"MERGE into {self.table_uri} wrote {written} rows where {expected} were expected "
                f"({r.rows_copied} kept, {expected - r.rows_copied} updated or inserted); did the source change "
                "while the MERGE read it? Nothing was committed"
            )

    def commit(self):
        from airflow_delta_provider.spark.result import CommandResult

        r = self.result
        if not r.removed and not r.added:
            return CommandResult(self.table_uri, self.operation, None, self.metrics())
        ts = now_ms()
        if self.metadata is not None:
            self.txn.update_metadata(self.metadata)
        self.txn.add_all([*r.added, *(f.remove(ts) for f in r.removed)])
        metrics = self.metrics()
        commit = self.txn.commit(metrics=metrics, token=self.token)
        return CommandResult(self.table_uri, self.operation, commit.version, metrics)


#: Source types a column of the key's type takes without loss (delta-spark casts them on MERGE).
_UPCASTS = {
    "long": {"byte", "short", "integer"},
    "integer": {"byte", "short"},
    "short": {"byte"},
    "double": {"float", "byte", "short", "integer"},
}


def _fitted(table: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """``source`` with each top-level column the table has at a wider type
    (an int into a long) given the table's type: the clauses cast it."""
    types = {f["name"].lower(): f["type"] for f in table["fields"]}
    fields = []
    for f in source["fields"]:
        wanted = types.get(f["name"].lower())
        if isinstance(wanted, str) and isinstance(f["type"], str) and f["type"] in _UPCASTS.get(wanted, ()):
            f = {**f, "type": wanted}
        fields.append(f)
    return {**source, "fields": fields}


def run_merge(
    spark: SparkSession,
    table: str,
    source: str,
    on: str,
    clauses: str | Sequence[Mapping[str, Any]],
    *,
    source_format: str = "parquet",
    source_version: int | None = None,
    source_options: Mapping[str, str] | None = None,
    target_alias: str = "t",
    source_alias: str = "s",
    merge_schema: bool = False,
    token: str | None = None,
    io: str = "auto",
    storage_options: Mapping[str, str] | None = None,
):
    """MERGE INTO ``table`` AS ``target_alias`` USING ``source`` AS
    ``source_alias`` ON ``on`` with ``clauses``; a CommandResult.

    ``source`` is a path in ``source_format`` (``parquet``, ``csv``,
    ``json``, ``orc`` or ``delta``; a Delta source at ``source_version``,
    default its latest). ``version`` is None when nothing changed.
    ``storage_options`` reach the table and a Delta source from this process.
    """
    return MergeCommand(
        spark,
        table,
        source,
        on,
        clauses,
        source_format=source_format,
        source_version=source_version,
        source_options=source_options,
        target_alias=target_alias,
        source_alias=source_alias,
        merge_schema=merge_schema,
        token=token,
        io=io,
        storage_options=storage_options,
    ).run()


__all__ = ["MergeCommand", "run_merge"]
