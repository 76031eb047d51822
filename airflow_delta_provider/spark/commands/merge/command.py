"""MERGE: upsert a source into a table, as delta-spark's ``MergeIntoCommand`` does.

The clause language is :mod:`~airflow_delta_provider.delta.operations.merge_clauses`;
what each joined row becomes is :mod:`~airflow_delta_provider.spark.commands.merge.rows`;
``docs/merge.rst`` is the user's account. The steps, each as cheap as the
clauses allow:

1. **Prepare** (no data job): the snapshot and a transaction; the source's
   schema against the table's (``*`` clauses need a source that fits, or
   ``merge_schema``); every expression analysed; a file source persisted,
   so every step reads the same rows.
2. **Candidates**: one aggregation counts the source's rows and takes the
   min and max of each join key (``t.k = s.k``); with the join condition's
   target-only conjuncts they prune files by partition values and stats
   (:mod:`~airflow_delta_provider.delta.scan.merge_condition`), and a small
   source's integral keys prune file by file. ``not_matched_by_source``
   needs every target row: no pruning.
3. **Insert-only**: the source rows matching none of the candidates are
   appended. Nothing is rewritten.
4. Otherwise **find touched files**: the candidates inner-joined (left-joined
   with ``not_matched_by_source``) to the source, counted per file and
   clause; a target row matched twice is refused unless every matched clause
   deletes.
5. **Rewrite** the touched files (a left join to the source) and insert the
   unmatched source rows (an anti-join to the matched keys, for an
   equi-join; else one full outer join).
6. **Commit** removes and adds (and the evolved schema) as one version,
   once the rows written add up.

A MERGE that inserts reads at ``Serializable``; one that only updates and
deletes at ``WriteSerializable`` (unless the table asks for
``Serializable``), so concurrent blind appends land beside it.

On a table with deletion vectors, touched files are rewritten whole
(copy-on-write); the commit removes them, vectors included.

On a table with row tracking enabled, rewritten target rows keep their
stable row ids (and their commit versions unless a clause updates them) in
the materialized columns (:mod:`~airflow_delta_provider.spark.read.row_tracking`);
inserted rows get fresh ones.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta.table_features import column_mapping
from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.table_features import type_widening
from airflow_delta_provider.delta.actions.model import AddFile
from airflow_delta_provider.delta.errors import (
    AppendOnlyViolationError,
    DeltaError,
    InvalidInputError,
    MultipleSourceMatchesError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from airflow_delta_provider.delta.operations.merge_clauses import (
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
from airflow_delta_provider.delta.scan.merge_condition import (
    JoinFacts,
    check_alias,
    join_facts,
    key_range_sql,
    nondeterministic_calls,
)
from airflow_delta_provider.delta.schema.evolution import merge_schemas
from airflow_delta_provider.delta.schema.names import check_column_names
from airflow_delta_provider.delta.schema.types import schema_string, type_name
from airflow_delta_provider.spark.commands.dml import DmlCommand, elapsed_ms, now_ms
from airflow_delta_provider.spark.runtime.io_mode import resolve_io
from airflow_delta_provider.spark.commands.merge.rows import MergeRows
from airflow_delta_provider.spark.read.scan import spark_schema

#: Key types whose min/max bound a column exactly, by kind (source and target must share one).
_KEY_KINDS = {
    "byte": "integral",
    "short": "integral",
    "integer": "integral",
    "long": "integral",
    "date": "date",
    "string": "string",
}
#: Up to how many source rows the source's keys are collected to prune files
#: one by one (8 bytes a key: 16 MB at most on the driver).
KEY_SET_ROWS = 2_000_000
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
        self.counts: Counter[int] = Counter()  # target rows per clause index that acts on them (COPY: none)
        self.source_rows = 0
        self.inserted = 0
        self._deleting_duplicates = False
        self._persisted: list[DataFrame] = []
        self._matched_keys: DataFrame | None = None  # the source keys of the matched pairs, when kept

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
        self.txn = self.table.transaction(
            self.operation, parameters=self.parameters, snapshot=snap, isolation_level=self._isolation_level()
        )
        from airflow_delta_provider.spark.read.row_tracking import materialized

        self.tracking = materialized(snap)
        if table_properties.append_only(snap.metadata) and any(c.action != INSERT for c in self.clauses):
            raise AppendOnlyViolationError(
                f"MERGE with update or delete clauses is not allowed: table {self.table_uri} is append-only "
                "(delta.appendOnly=true); only not_matched insert clauses are"
            )
        self.check_change_expressions(
            [sql for c in self.clauses if isinstance(c.assignments, Mapping) for sql in c.assignments.values()]
        )
        for sql in [self.on, *(c.condition for c in self.clauses if c.condition is not None)]:
            calls = nondeterministic_calls(sql)
            if calls:
                raise InvalidInputError(
                    f"MERGE conditions must be deterministic (they are evaluated more than once), but {sql!r} "
                    f"calls {', '.join(calls)}"
                )
        source = read_source(
            self.spark,
            self.source_uri,
            self.source_format,
            self.source_options,
            io=requested_io,
            storage_options=self.storage_options,
            version=self.source_version,
        )
        source_schema = type_widening.strip(column_mapping.strip(source.schema.jsonValue()))
        self._plan_schema(source_schema)
        table_struct = spark_schema(snap.schema)
        self.facts = join_facts(
            self.on, self.target_alias, self.source_alias, table_struct.names, [f.name for f in source.schema.fields]
        )
        self.rows = MergeRows(
            self.spark,
            self.clauses,
            self.on,
            self.schema,
            table_struct,
            source.schema,
            self.target_alias,
            self.source_alias,
            tracking=self.tracking.names if self.tracking is not None else (),
        )
        self.rows.validate(inserts_beside_targets=self._has(action=INSERT) and not self.facts.equi_join)
        insert_only = all(c.when == NOT_MATCHED for c in self.clauses)  # its adds record its changes
        if self.records_changes and self.rows.generates_identity_values and not insert_only:
            raise UnsupportedFeatureError(
                f"MERGE cannot insert rows with generated identity values into {self.table_uri} while "
                "delta.enableChangeDataFeed is on and it also updates or deletes: the change data would need "
                "the same values from a second pass. Give the identity column in the inserts (GENERATED BY "
                "DEFAULT), or insert with an insert-only MERGE or APPEND"
            )
        # Read once, whatever the source does meanwhile (delta-spark's
        # materializeSource); a Delta source at its version cannot change.
        self.source = source if self.source_format == "delta" else self._keep(source)
        self.predicate = self._source_facts()
        self.candidates = self._candidates()
        if self.predicate is None:
            self.txn.read_whole_table()
        else:
            self.txn.read_predicate(self.predicate)
        self.txn.read_files(self.candidates)

    def _isolation_level(self) -> str:
        """``Serializable`` for a MERGE that inserts (a concurrent append
        could hold a key it inserts again) or on a table that asks for it
        (``delta.isolationLevel``); ``WriteSerializable`` otherwise, so
        concurrent blind appends land beside updates and deletes."""
        asked = self.snapshot.metadata.configuration.get("delta.isolationLevel")
        if self._has(action=INSERT) or asked == "Serializable":
            return "Serializable"
        return "WriteSerializable"

    def _keep(self, frame: DataFrame) -> DataFrame:
        """``frame`` persisted (memory, then disk) until the command ends."""
        from pyspark import StorageLevel

        kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(kept)
        return kept

    def run(self):
        try:
            return super().run()
        finally:
            for frame in self._persisted:
                frame.unpersist()
            self._persisted.clear()

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
        widen = table_properties.type_widening_enabled(previous)
        merged = merge_schemas(snap.schema, _fitted(snap.schema, source_schema), type_widening=widen)
        if merged == snap.schema:
            return
        if not self.merge_schema:
            raise SchemaMismatchError(
                f"the MERGE source does not fit the table for a * clause: {_differences(snap.schema, merged)}. "
                "Pass merge_schema to change the table's schema, or name the columns to set in the clause"
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
        from airflow_delta_provider.delta.scan.skipping import Predicate

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
        source_types = {f.name: f.dataType.typeName() for f in self.source.schema.fields}
        out = []
        for target, source in self.facts.key_pairs:
            t = self._kind(target)
            if t is not None and t == _KEY_KINDS.get(source_types[source]):
                out.append((target, source))
        return out

    def _kind(self, column: str) -> str | None:
        """The key kind of a table column (integral, date, string), or None."""
        delta_type = next(f["type"] for f in self.snapshot.schema["fields"] if f["name"] == column)
        return _KEY_KINDS.get(type_name(delta_type)) if isinstance(delta_type, str) else None

    def _candidates(self) -> list[AddFile]:
        """The files that may hold a matched row: pruned by the predicate, then,
        for a source of at most :data:`KEY_SET_ROWS` rows, by its set of keys."""
        from airflow_delta_provider.delta.scan.skipping import prune_by_keys

        if self._has(when=NOT_MATCHED_BY_SOURCE):
            return list(self.snapshot.files)  # every target row may be acted on
        if not self.source_rows:
            return []  # an empty source matches nothing
        files = self._prune()
        pair = next((p for p in self._range_pairs() if self._kind(p[0]) == "integral"), None)
        if pair is None or self.source_rows > KEY_SET_ROWS or len(files) <= 1:
            return files
        start = time.monotonic()
        keys = self._source_keys(pair[1])
        self.result.scan_ms += elapsed_ms(start)
        snap = self.snapshot
        return prune_by_keys(
            files, pair[0], keys, snap.schema, snap.partition_columns, mapping_mode=snap.column_mapping.mode
        )

    def _source_keys(self, column: str) -> list[int]:
        """The source's distinct non-NULL values of ``column``, sorted (one small job)."""
        import numpy as np
        import pyarrow.compute as pc

        values = self.source.select(F.col(f"`{column}`")).toArrow().column(0)
        return np.unique(pc.drop_null(values).to_numpy()).tolist()

    # --- steps 3 to 5 -------------------------------------------------------

    def rewrite(self) -> None:
        inserts = self._has(action=INSERT)
        if all(c.when == NOT_MATCHED for c in self.clauses):
            self.write(self._inserts(self.candidates))
            self._settle_counts()
            return
        touched, matched = self._find_touched_files()
        if not touched and not inserts:
            return
        by_path = {f.path: f for f in self.candidates}
        rewritten = [by_path[p] for p in sorted(touched)]
        with_matches = [by_path[p] for p in sorted(matched)]
        if self._deleting_duplicates:
            out = self._rewrite_deleting(rewritten, with_matches)
        elif inserts and not self.facts.equi_join:  # type: ignore[union-attr]
            out = self._rewrite_with_inserts(rewritten, [by_path[p] for p in sorted(matched - touched)])
        else:
            out = self._rewrite_matched(rewritten)
            if inserts:
                new = self._inserts(with_matches)
                out = new if out is None else out.unionByName(new)
        self.result.removed = rewritten
        if out is not None:
            self.write(out)
        if rewritten and self.records_changes:
            self._record_changes(rewritten, with_matches)
        self._settle_counts()

    def _record_changes(self, rewritten: list[AddFile], with_matches: list[AddFile]) -> None:
        """Write the MERGE's changed rows as change data, as delta-spark
        records them: each updated target row's pre- and post-image, each
        deleted one, and each inserted source row. A second pass over the
        rewritten files (only insert-only MERGEs, which rewrite nothing, need
        none: their adds are their inserts)."""
        from airflow_delta_provider.delta.table_features.change_data_feed import DELETE as DELETED
        from airflow_delta_provider.delta.table_features.change_data_feed import INSERT as INSERTED
        from airflow_delta_provider.delta.table_features.change_data_feed import UPDATE_POSTIMAGE, UPDATE_PREIMAGE
        from airflow_delta_provider.spark.write.change_data import tagged, with_change_type

        rows = self.rows
        target, source = rows.target(self.scan(rewritten)), rows.source(self.source)
        action = F.col(rows.action_column)
        updates, deletes = rows.indexes(action=UPDATE), rows.indexes(action=DELETE)
        fields = rows.struct.fields
        before = rows.target_columns_out()[: len(fields)]  # without row tracking columns or derive flags
        changes = None
        if self._deleting_duplicates:  # every matched clause deletes (or none is there): one delete per row
            conditions = [c.condition for c in self.clauses if c.when == MATCHED]
            if conditions:
                deleting = self.on
                if None not in conditions:
                    deleting = f"({self.on}) AND (" + " OR ".join(f"({c})" for c in conditions) + ")"
                deleted = rows.join(target, source, "left_semi", on=deleting).alias(self.target_alias)
                changes = with_change_type(deleted.select(*before), DELETED)
            unmatched = rows.join(target, source, "left_anti").alias(self.target_alias)
            joined = unmatched.withColumn(rows.action_column, rows.cascade(NOT_MATCHED_BY_SOURCE))
            kinds: tuple[str, ...] = (NOT_MATCHED_BY_SOURCE,)
        else:
            joined = rows.join(target, source, "left")
            joined = joined.withColumn(rows.action_column, rows.action(unmatched_sources=False))
            kinds = (MATCHED, NOT_MATCHED_BY_SOURCE)
        after = [c.cast(f.dataType).alias(f.name) for c, f in zip(rows.postimage_columns(action, kinds=kinds), fields)]
        image = F.when(
            action.isin(updates), F.array(tagged(before, UPDATE_PREIMAGE), tagged(after, UPDATE_POSTIMAGE))
        ).otherwise(F.array(tagged(before, DELETED)))
        changed = joined.filter(action.isin(updates + deletes))
        images = changed.select(F.explode(image).alias(rows.action_column)).select(f"{rows.action_column}.*")
        changes = images if changes is None else changes.unionByName(images)
        if self._has(action=INSERT):
            inserted = rows.derive(self._inserts(with_matches))
            if self.tracking is not None:
                inserted = inserted.drop(*self.tracking.names)
            changes = changes.unionByName(with_change_type(inserted, INSERTED))
        self.write_changes(changes, schema=self.schema, metadata=self.metadata or self.snapshot.metadata)

    def _rewrite_matched(self, rewritten: list[AddFile]) -> DataFrame | None:
        """The rows of the rewritten files after the clauses: a left join to
        the source (broadcast when the source is small), so the target's rows
        are not shuffled. None without files to rewrite."""
        if not rewritten:
            return None
        rows = self.rows
        joined = rows.join(rows.target(self.copy_rows(rewritten)), rows.source(self.source), "left")
        action = F.col(rows.action_column)
        joined = joined.withColumn(rows.action_column, rows.action(unmatched_sources=False))
        kinds = (MATCHED, NOT_MATCHED_BY_SOURCE)
        return joined.filter(~rows.drops(action)).select(*rows.output_columns(action, kinds=kinds))

    def _rewrite_with_inserts(self, rewritten: list[AddFile], spectators: list[AddFile]) -> DataFrame:
        """The rows of the rewritten files after the clauses, and the inserts,
        from one full outer join, for a join condition that is more than
        key equalities (:meth:`_inserts` needs those). The ``spectators``
        (files with matched rows no clause changes) join too, so that their
        matches are not taken for unmatched source rows; their rows are not
        written."""
        rows = self.rows
        source = rows.source(self.source)
        target = self._target_rows(rewritten, spectators)
        if target is None:
            return self._inserts([])
        joined = rows.join(target, source, "full")
        action = F.col(rows.action_column)
        joined = joined.withColumn(rows.action_column, rows.action())
        written = F.col(rows.target_marker).isNull() | F.col(rows.target_marker)
        return joined.filter(~rows.drops(action) & written).select(*rows.output_columns(action))

    def _rewrite_deleting(self, rewritten: list[AddFile], matched: list[AddFile]) -> DataFrame:
        """The rewrite when target rows are matched by several source rows
        and every matched clause deletes: a row goes when any of its matches
        meets a delete condition (an anti join), so that no row is written
        twice."""
        rows = self.rows
        source = rows.source(self.source)
        conditions = [c.condition for c in self.clauses if c.when == MATCHED]
        survivors = rows.target(self.copy_rows(rewritten))
        if conditions:  # else matched rows stay as they are
            deleting = self.on
            if None not in conditions:
                deleting = f"({self.on}) AND (" + " OR ".join(f"({c})" for c in conditions) + ")"
            survivors = rows.join(survivors, source, "left_anti", on=deleting).alias(self.target_alias)
        out = survivors.select(*rows.target_columns_out())
        if self._has(when=NOT_MATCHED_BY_SOURCE):
            kept = rows.join(survivors, source, "left_semi").alias(self.target_alias)
            unmatched = rows.join(survivors, source, "left_anti").alias(self.target_alias)
            action = F.col(rows.action_column)
            unmatched = unmatched.withColumn(rows.action_column, rows.cascade(NOT_MATCHED_BY_SOURCE))
            changed = unmatched.filter(~rows.drops(action)).select(
                *rows.output_columns(action, kinds=(NOT_MATCHED_BY_SOURCE,))
            )
            out = kept.select(*rows.target_columns_out()).unionByName(changed)
        if self._has(action=INSERT):
            out = out.unionByName(self._inserts(matched))
        return out

    def _target_rows(self, rewritten: list[AddFile], spectators: list[AddFile]) -> DataFrame | None:
        """The rows of the files to rewrite (marker true) and of the files
        only joined (marker false), under the target alias; None for none."""
        rows = self.rows
        frames = []
        for files, marker in ((rewritten, True), (spectators, False)):
            if files:
                frames.append(rows.target(self.copy_rows(files)).withColumn(rows.target_marker, F.lit(marker)))
        if not frames:
            return None
        out = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        return out.alias(self.target_alias)

    def _inserts(self, files: list[AddFile]) -> DataFrame:
        """The source rows that match no row of ``files``, each as the first
        ``not_matched`` clause inserts it.

        When the join condition is key equalities (and target-only
        conditions), a source row is unmatched exactly when its keys are not
        among the keys of the matched pairs: the source is anti-joined to
        that small set (kept from :meth:`_find_touched_files`, or found by an
        inner join), so the target's rows are never shuffled. Otherwise the
        source is anti-joined to the target's rows."""
        rows = self.rows
        source = rows.source(self.source)
        pairs = self._key_pairs_for_inserts()
        if files and pairs:
            keys = self._matched_keys
            if keys is None:
                keys = rows.join(rows.target(self.scan(files)), source, "inner").select(
                    *[rows.source_value(s).alias(f"s{i}") for i, (_t, s) in enumerate(pairs)]
                )
            keys = F.broadcast(keys.distinct())
            condition = [rows.source_value(s) == keys[f"s{i}"] for i, (_t, s) in enumerate(pairs)]
            source = source.join(keys, condition, "left_anti").alias(self.source_alias)
        elif files:
            target = rows.target(self.scan(files))
            source = source.join(target, F.expr(self.on), "left_anti").alias(self.source_alias)
        action = F.col(rows.action_column)
        source = source.withColumn(rows.action_column, rows.cascade(NOT_MATCHED))
        return source.filter(~rows.drops(action)).select(*rows.output_columns(action, kinds=(NOT_MATCHED,)))

    def _find_touched_files(self) -> tuple[set[str], set[str]]:
        """One job over the candidates joined to the source (inner, or left
        with ``not_matched_by_source`` clauses; Spark broadcasts the source
        when it is under ``spark.sql.autoBroadcastJoinThreshold``): per file
        and clause, the target rows each clause acts on. Returns the touched
        files (a clause updates or deletes a row) and the files holding a
        matched row; sets :attr:`counts`.

        Matched rows are grouped by their row (file key, row index): a row
        matched twice is refused unless every matched clause deletes (then
        :meth:`_rewrite_deleting` applies). Unmatched rows are counted by
        file and action. For an equi-join that inserts, the matched pairs
        (their keys and actions only) are kept for :meth:`_inserts`."""
        from airflow_delta_provider.spark.read.scan import match_frame

        rows = self.rows
        if not self.candidates:
            return set(), set()
        start = time.monotonic()
        frame, key, row, by_key = match_frame(
            self.spark, self.snapshot, self.candidates, None, self.io, with_data=True, uri_keys=True
        )
        nmbs = self._has(when=NOT_MATCHED_BY_SOURCE)
        joined = rows.join(rows.target(frame), rows.source(self.source), "left" if nmbs else "inner")
        matched = rows.is_matched
        keys = [f"s{i}" for i in range(len(self._key_pairs_for_inserts()))]
        pairs = joined.select(
            F.col(f"`{key}`").alias("k"),
            F.when(matched, F.col(f"`{row}`")).alias("r"),
            rows.action(unmatched_sources=False).alias("a"),
            matched.alias("m"),
            *[rows.source_value(s).alias(k) for k, (_t, s) in zip(keys, self._key_pairs_for_inserts())],
        )
        if keys and not nmbs:
            pairs = self._keep(pairs)  # small: matched pairs only
            self._matched_keys = pairs.select(*keys)
        per_row = pairs.groupBy("k", "r", F.when(~F.col("m"), F.col("a")).alias("a0")).agg(
            F.count(F.lit(1)).alias("n"), F.max("a").alias("a")
        )
        per_file = per_row.groupBy("k", "a").agg(
            F.sum(F.when(F.col("r").isNull(), F.col("n")).otherwise(F.lit(1))).alias("n"),
            F.max(F.when(F.col("r").isNotNull(), F.col("n"))).alias("most"),
        )
        found = per_file.collect()
        self.result.scan_ms += elapsed_ms(start)

        touched: set[str] = set()
        with_matches: set[str] = set()
        changing = set(rows.indexes(action=UPDATE)) | set(rows.indexes(action=DELETE))
        duplicated = False
        for r in found:
            path = by_key[r["k"]]
            self.counts[r["a"]] += int(r["n"])
            if r["a"] in changing:
                touched.add(path)
            if r["most"] is not None:
                with_matches.add(path)
                duplicated = duplicated or r["most"] > 1
        if duplicated and not self._only_deletes_match():
            self._raise_multiple_matches(joined, key, row)
        self._deleting_duplicates = duplicated
        return touched, with_matches

    def _key_pairs_for_inserts(self) -> tuple[tuple[str, str], ...]:
        """The join's key pairs when :meth:`_inserts` may anti-join the source to the matched keys."""
        facts = self.facts
        if facts is None or not facts.equi_join or not self._has(action=INSERT):
            return ()
        return facts.key_pairs

    def _only_deletes_match(self) -> bool:
        """Whether every matched clause deletes (or there is none): then a
        target row's several matches cannot disagree on its new values."""
        return all(c.action == DELETE for c in self.clauses if c.when == MATCHED)

    def _raise_multiple_matches(self, joined: DataFrame, key: str, row: str) -> None:
        """Name one target row (by the target columns of the join) matched by more than one source row."""
        assert self.facts is not None
        rows = self.rows
        shown = list(self.facts.target_columns[:_KEYS_SHOWN])
        example = (
            joined.filter(rows.is_matched)
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
            "and a target row may be matched by one source row only (unless every matched clause deletes): "
            "deduplicate the source on the join keys"
        )

    # --- writing and committing ---------------------------------------------

    def write(self, frame: DataFrame) -> list[AddFile]:
        from airflow_delta_provider.spark.write.files import write_files

        snap = self.snapshot
        md = self.metadata or snap.metadata
        start = time.monotonic()
        try:
            adds = write_files(
                self.rows.derive(frame),
                snap,
                self.schema,
                snap.partition_columns,
                configuration=dict(md.configuration),
                io=self.io,
                hidden_columns=self.tracking.names if self.tracking is not None else (),
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

    def _settle_counts(self) -> None:
        """The rows copied and inserted, from the rows written: the files
        removed held the copied rows and those updated or deleted; every row
        written is a copy, an update or an insert. A source that changed
        under the MERGE (it is read more than once), or a bug, shows as
        counts that cannot be, and fails before the commit."""
        r = self.result
        c = self._row_counts()
        written = sum(f.num_records or 0 for f in r.added)
        r.rows_copied = (self.row_count(r.removed) if r.removed else 0) - sum(c.values())
        self.inserted = written - r.rows_copied - c["matched_updated"] - c["source_updated"]
        most = self.source_rows if self._has(action=INSERT) else 0
        if r.rows_copied < 0 or not 0 <= self.inserted <= most or any(f.num_records is None for f in r.added):
            raise DeltaError(
                f"MERGE into {self.table_uri} wrote {written} rows, which do not add up: {r.rows_copied} kept, "
                f"{self.inserted} inserted of {self.source_rows} source rows. Did the source change while the "
                "MERGE read it? Nothing was committed"
            )

    def commit(self):
        from airflow_delta_provider.spark.result import CommandResult

        r = self.result
        if not r.removed and not r.added:
            return CommandResult(self.table_uri, self.operation, None, self.metrics())
        ts = now_ms()
        self._record_high_water_marks()
        if self.metadata is not None:
            self.txn.update_metadata(self.metadata)
        self.txn.add_all([*r.added, *(f.remove(ts) for f in r.removed), *r.changes])
        metrics = self.metrics()
        commit = self.txn.commit(metrics=metrics, token=self.token)
        return CommandResult(self.table_uri, self.operation, commit.version, metrics)

    def _record_high_water_marks(self) -> None:
        """Move the high-water marks of the identity columns inserts generated
        values for past every value written (delta-spark's identity stats
        tracker); a change of the marks alone is tagged as delta-spark tags it."""
        from airflow_delta_provider.delta.table_features import identity_columns as identity
        from airflow_delta_provider.spark.write.generated_columns import written_extreme

        generated = self.rows.generates_identity_values
        if not generated or not self.result.added:
            return
        md = self.metadata or self.snapshot.metadata
        mapping = column_mapping.ColumnMapping.of(md.schema_json, md.configuration)
        partitions = {c.lower() for c in md.partition_columns}
        marks = {}
        for ident in generated:
            key = mapping.physical_column(ident.column) if mapping.enabled else ident.column
            extreme = written_extreme(
                self.table.storage, self.result.added, key, ident.column.lower() in partitions, ident.step > 0
            )
            mark = ident.new_high_water_mark([] if extreme is None else [extreme])
            if mark is not None and mark != ident.high_water_mark:
                marks[ident.column] = mark
        if not marks:
            return
        if self.metadata is None:
            self.txn.tag(identity.COMMIT_TAG, "true")
        schema = identity.with_high_water_marks(md.schema_json, marks)
        self.metadata = replace(md, schema_string=schema_string(schema))


#: Narrower source types a column takes without loss (delta-spark casts them
#: on MERGE); merge_schemas itself widens among byte, short and integer.
_UPCASTS = {"long": {"byte", "short", "integer"}, "double": {"float", "byte", "short", "integer"}}


def _differences(table: dict[str, Any], merged: dict[str, Any]) -> str:
    """What merging the source changed in the table's schema, top-level column by column."""
    old = {f["name"]: f["type"] for f in table["fields"]}
    out = []
    for f in merged["fields"]:
        if f["name"] not in old:
            out.append(f"new column {f['name']}")
        elif f["type"] != old[f["name"]]:
            before, after = _type_text(old[f["name"]]), _type_text(f["type"])
            nested = " (its nested fields differ)" if before == after else ""
            out.append(f"column {f['name']} of type {before} would become {after}{nested}")
    return "; ".join(out)


def _type_text(delta_type: Any) -> str:
    return delta_type if isinstance(delta_type, str) else str(delta_type.get("type", "?"))


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
    **options: Any,
):
    """MERGE INTO ``table`` AS ``target_alias`` USING ``source`` AS
    ``source_alias`` ON ``on`` with ``clauses``; a CommandResult.

    ``options`` are :class:`MergeCommand`'s: ``source_format`` (``parquet``,
    ``csv``, ``json``, ``orc`` or ``delta``), ``source_version`` (a Delta
    source's version, default its latest), ``source_options`` (reader
    options), ``target_alias`` (``t``), ``source_alias`` (``s``),
    ``merge_schema``, ``token``, ``io`` and ``storage_options`` (which reach
    the table and a Delta source from this process). ``version`` is None
    when nothing changed.
    """
    return MergeCommand(spark, table, source, on, clauses, **options).run()


__all__ = ["MergeCommand", "run_merge"]
