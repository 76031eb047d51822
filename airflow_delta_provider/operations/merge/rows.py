"""The rows of a MERGE: the target joined to the source, and what each clause makes of them.

The target's rows are read under ``target_alias`` and the source's under
``source_alias``, each with a marker column that is non-null on its own
side, so that after an outer join every row is known to be:

- a **matched** pair (both markers): the first ``matched`` clause whose
  condition holds acts, else the target row is copied;
- a **target row alone**: the first ``not_matched_by_source`` clause acts,
  else the row is copied;
- a **source row alone**: the first ``not_matched`` clause inserts it, else
  it is skipped.

:meth:`MergeRows.action` is that decision as one integer column: the index
of the clause that acts, :data:`COPY` or :data:`SKIP`. A NULL condition
counts as false, as in SQL ``WHERE``. :meth:`MergeRows.output_columns` are
the row's values after the action, of the table's types (``*`` takes the
source's columns by name, struct fields too, never by position).

Generated and identity columns follow delta-spark: a generated column a
clause does not give is computed from the row's new values, and one it gives
is checked by the write job; an insert that gives no identity value gets a
fresh one (a GENERATED ALWAYS column may not be given), and an update never
changes an identity column (naming one is refused; ``update *`` keeps it).
:meth:`MergeRows.derive` finishes the rows from hidden flag columns.

Every expression is analysed by Spark against empty frames before anything
runs (:meth:`MergeRows.validate`): an unknown or ambiguous column, a
non-boolean condition, an insert that reads the target or a
``not_matched_by_source`` clause that reads the source is an
InvalidInputError naming the clause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructType

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.table_features.generated_columns import generation_expressions
from airflow_delta_provider.delta.table_features.identity_columns import (
    Identity,
    check_explicit_insert,
    check_not_updated,
    identity_columns,
)
from airflow_delta_provider.operations.merge.clauses import (
    DELETE,
    INSERT,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    MergeClause,
)
from airflow_delta_provider.spark.conditions import analyse
from airflow_delta_provider.spark.read.files import empty_frame, free_name, spark_schema
from airflow_delta_provider.spark.write.files import conform_column
from airflow_delta_provider.spark.write.generated_columns import fill_generated, generated_over, with_identity_values

#: The action of a target row no clause acts on: it stays as it is.
COPY = -1
#: The action of a source row no clause inserts.
SKIP = -2


class MergeRows:
    """One MERGE's join and clause cascade, as Spark columns.

    :param schema: The table's Delta schema after the MERGE (with the
        columns schema evolution adds): the output columns.
    :param table_struct: The Spark schema the target's rows are read with
        (the table's, before evolution).
    :param source_struct: The source's Spark schema.
    :param tracking: The materialized row id and row commit version columns
        (row tracking enabled) the target's rows hold after the table's:
        the output keeps a target row's id, and its version unless a clause
        updates it (NULL: the new commit's); source rows get NULL for both.
    """

    def __init__(
        self,
        spark: SparkSession,
        clauses: Sequence[MergeClause],
        on: str,
        schema: Mapping[str, Any],
        table_struct: StructType,
        source_struct: StructType,
        target_alias: str,
        source_alias: str,
        tracking: Sequence[str] = (),
    ) -> None:
        self.spark = spark
        self.tracking = tuple(tracking)
        self.clauses = tuple(clauses)
        self.on = on
        self.schema = schema
        self.fields = list(schema["fields"])
        self.struct = spark_schema(schema)
        self.table_struct = table_struct
        self.target_columns = table_struct.names
        self._table_types = {f.name.lower(): f.dataType for f in table_struct.fields}
        self.source_struct = source_struct
        self.target_alias = target_alias
        self.source_alias = source_alias
        taken = {f["name"].lower() for f in self.fields} | {f.name.lower() for f in source_struct.fields}
        self.target_marker = free_name("_merge_target_row", taken)
        self.source_marker = free_name("_merge_source_row", taken | {self.target_marker.lower()})
        #: The column a frame may hold :meth:`action` in.
        self.action_column = free_name(
            "_merge_action", taken | {self.target_marker.lower(), self.source_marker.lower()}
        )
        self._source_fields = {f.name.lower(): f for f in source_struct.fields}
        self.generated = generation_expressions(schema)
        self.identities = identity_columns(schema)
        self._identity_names = {i.column.lower() for i in self.identities}
        #: Per clause, the generated and identity columns it does not give: derived after the clauses.
        self._derived: list[set[str]] = [set() for _ in self.clauses]
        self._values = [self._clause_values(i, c) for i, c in enumerate(self.clauses)]
        taken |= {self.target_marker.lower(), self.source_marker.lower(), self.action_column.lower()}
        #: Per derived column, the hidden flag column saying the row's value is to be derived.
        self.derive_flags: dict[str, str] = {}
        for name in [*self.generated, *(i.column for i in self.identities)]:
            if any(name in d for d in self._derived):
                self.derive_flags[name] = free_name(f"_merge_derive_{len(self.derive_flags)}", taken)
                taken.add(self.derive_flags[name].lower())

    # --- frames -------------------------------------------------------------

    def target(self, df: DataFrame) -> DataFrame:
        """The target's rows (the table's columns, possibly with more), under
        the target alias: columns schema evolution adds read as NULL."""
        have = {c.lower() for c in self.target_columns}
        new = {f.name: F.lit(None).cast(f.dataType) for f in self.struct.fields if f.name.lower() not in have}
        if new:
            df = df.withColumns(new)
        return df.withColumn(self.target_marker, F.lit(True)).alias(self.target_alias)

    def source(self, df: DataFrame) -> DataFrame:
        """The source's rows under the source alias."""
        return df.withColumn(self.source_marker, F.lit(True)).alias(self.source_alias)

    def join(self, target: DataFrame, source: DataFrame, how: str, on: str | None = None) -> DataFrame:
        """``target`` joined to ``source`` (both from :meth:`target` and :meth:`source`)."""
        return target.join(source, F.expr(on or self.on), how)

    # --- the decision -------------------------------------------------------

    @property
    def is_matched(self) -> Column:
        return F.col(self.target_marker).isNotNull() & F.col(self.source_marker).isNotNull()

    @property
    def is_target_row(self) -> Column:
        return F.col(self.target_marker).isNotNull()

    def action(self, *, unmatched_sources: bool = True) -> Column:
        """The index of the clause that acts on the row, or COPY, or SKIP.
        Without ``unmatched_sources`` (an inner or left join) the
        ``not_matched`` clauses are left out: no row of the frame is theirs."""
        return (
            F.when(self.is_matched, self._cascade(MATCHED, COPY))
            .when(self.is_target_row, self._cascade(NOT_MATCHED_BY_SOURCE, COPY))
            .otherwise(self._cascade(NOT_MATCHED, SKIP) if unmatched_sources else F.lit(SKIP))
        )

    def cascade(self, when: str) -> Column:
        """The action among the clauses of one kind only (for a frame whose rows are all of that kind)."""
        return self._cascade(when, SKIP if when == NOT_MATCHED else COPY)

    def _cascade(self, when: str, otherwise: int) -> Column:
        out = None
        for i, clause in enumerate(self.clauses):
            if clause.when != when:
                continue
            cond = F.lit(True) if clause.condition is None else F.coalesce(F.expr(clause.condition), F.lit(False))
            out = F.when(cond, F.lit(i)) if out is None else out.when(cond, F.lit(i))
        return F.lit(otherwise) if out is None else out.otherwise(F.lit(otherwise))

    def drops(self, action: Column) -> Column:
        """Whether a row with ``action`` leaves no row behind (deleted, or a source row not inserted)."""
        gone = [i for i, c in enumerate(self.clauses) if c.action == DELETE] + [SKIP]
        return action.isin(gone)

    def indexes(self, *, when: str | None = None, action: str | None = None) -> list[int]:
        """The indexes of the clauses of a kind and/or an action."""
        return [
            i
            for i, c in enumerate(self.clauses)
            if (when is None or c.when == when) and (action is None or c.action == action)
        ]

    def output_columns(
        self, action: Column, *, kinds: Sequence[str] = (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE)
    ) -> list[Column]:
        """Every column of the table after the MERGE, for a row with
        ``action``, using the clauses of ``kinds`` only: those whose rows the
        frame holds (a frame of source rows alone holds no target column)."""
        target_side = MATCHED in kinds or NOT_MATCHED_BY_SOURCE in kinds
        out = []
        for f in self.struct.fields:
            value = self.target_value(f.name) if target_side else F.lit(None).cast(f.dataType)
            expr = None
            for i, values in enumerate(self._values):
                if values is None or self.clauses[i].when not in kinds:
                    continue
                expr = F.when(action == i, values[f.name]) if expr is None else expr.when(action == i, values[f.name])
            out.append((value if expr is None else expr.otherwise(value)).alias(f.name))
        if self.tracking:
            row_id, version = self.tracking
            if target_side:  # kept; the version only where no clause changed the row
                kept_version = F.when(action == COPY, self._tracked(version))
                out += [self._tracked(row_id).alias(row_id), kept_version.alias(version)]
            else:
                out += [F.lit(None).cast("long").alias(n) for n in self.tracking]
        for name, flag in self.derive_flags.items():
            acting = [i for i, d in enumerate(self._derived) if name in d and self.clauses[i].when in kinds]
            out.append((action.isin(acting) if acting else F.lit(False)).alias(flag))
        return out

    def target_columns_out(self) -> list[Column]:
        """The table's columns of a target row left as it is (then its
        materialized row tracking columns, and the derive flags, false)."""
        kept = [self.target_value(f.name).alias(f.name) for f in self.struct.fields]
        tracked = [self._tracked(n).alias(n) for n in self.tracking]
        return kept + tracked + [F.lit(False).alias(flag) for flag in self.derive_flags.values()]

    def _tracked(self, name: str) -> Column:
        return F.col(f"{quote_identifier(self.target_alias)}.{quote_identifier(name)}")

    def derive(self, frame: DataFrame) -> DataFrame:
        """``frame`` (from :meth:`output_columns` or :meth:`target_columns_out`)
        as the table's columns: identity values for the rows an insert gave
        none (delta-spark's GenerateIdentityValues), then the generated
        columns a clause did not give, computed from the row's new values."""
        flags = self.derive_flags
        if not flags:
            return frame
        fresh = [i for i in self.identities if i.column in flags]
        frame = with_identity_values(frame, fresh, {i.column: F.col(flags[i.column]) for i in fresh})
        generated = {name: F.col(flags[name]) for name in self.generated if name in flags}
        return fill_generated(frame, self.schema, generated).drop(*flags.values())

    def postimage_columns(self, action: Column, *, kinds: Sequence[str]) -> list[Column]:
        """The table's columns after an update, computed over the joined row
        without the flag step of :meth:`derive` (a change data postimage):
        a generated column an update clause does not give is its expression
        over the clause's new values."""
        n = len(self.struct.fields)
        columns = self.output_columns(action, kinds=kinds)[:n]
        out = []
        for f, col in zip(self.struct.fields, columns):
            expr = None
            if f.name in self.generated:
                for i, clause in enumerate(self.clauses):
                    if f.name in self._derived[i] and clause.when in kinds and clause.action != INSERT:
                        value = generated_over(self.schema, f.name, self._clause_sql(i, clause))
                        expr = F.when(action == i, value) if expr is None else expr.when(action == i, value)
            out.append(col if expr is None else expr.otherwise(col).alias(f.name))
        return out

    def _clause_sql(self, index: int, clause: MergeClause) -> dict[str, str]:
        """Per table column, the SQL of the value an update clause gives it over the joined row."""
        assigned = self._assigned(index, clause)
        out = {}
        for f in self.struct.fields:
            if f.name in assigned:
                out[f.name] = assigned[f.name]
            elif clause.assignments is None and f.name.lower() in self._source_fields:
                out[f.name] = (
                    f"{quote_identifier(self.source_alias)}.{quote_identifier(self._source_fields[f.name.lower()].name)}"
                )
            else:
                out[f.name] = f"{quote_identifier(self.target_alias)}.{quote_identifier(f.name)}"
        return out

    @property
    def generates_identity_values(self) -> list[Identity]:
        """The identity columns some insert clause generates values for."""
        return [i for i in self.identities if i.column in self.derive_flags]

    # --- values -------------------------------------------------------------

    def target_value(self, name: str) -> Column:
        """The target row's value of column ``name``, of the type it has after
        the MERGE (a struct that schema evolution widens gains NULL fields)."""
        value = F.col(f"{quote_identifier(self.target_alias)}.{quote_identifier(name)}")
        before = self._table_types.get(name.lower())
        after = self.struct[name].dataType
        return value if before is None else conform_column(value, before, after)

    def source_value(self, name: str) -> Column:
        """The source row's value of column ``name``."""
        return F.col(f"{quote_identifier(self.source_alias)}.{quote_identifier(name)}")

    def _clause_values(self, index: int, clause: MergeClause) -> dict[str, Column] | None:
        """Per output column, the value an update or insert clause gives it; None for a delete."""
        if clause.action == DELETE:
            return None
        inserting = clause.action == INSERT
        values: dict[str, Column] = {}
        assigned = self._assigned(index, clause)
        self._check_identity_assignments(index, clause, assigned)
        for f in self.struct.fields:
            sql = assigned.get(f.name)
            identity = f.name.lower() in self._identity_names
            gives = sql is not None or (clause.assignments is None and f.name.lower() in self._source_fields)
            if (f.name in self.generated and not gives) or (identity and inserting and not gives):
                self._derived[index].add(f.name)
            if identity and not inserting:
                values[f.name] = self.target_value(f.name)  # never updated (``update *`` keeps it)
            elif sql is not None:
                values[f.name] = F.expr(sql).cast(f.dataType)
            elif clause.assignments is None and f.name.lower() in self._source_fields:
                src = self._source_fields[f.name.lower()]  # by name at every depth, not by position
                values[f.name] = conform_column(self.source_value(src.name), src.dataType, f.dataType)
            elif inserting:
                values[f.name] = F.lit(None).cast(f.dataType)
            else:
                values[f.name] = self.target_value(f.name)
        return values

    def _check_identity_assignments(self, index: int, clause: MergeClause, assigned: dict[str, str]) -> None:
        """An update may not set an identity column; an insert may not give a
        GENERATED ALWAYS one (explicitly, or by ``*`` from a source that has it)."""
        if clause.action != INSERT:
            check_not_updated(self.schema, assigned, f"{clause.describe(index)}")
            return
        for ident in self.identities:
            named = ident.column in assigned
            starred = clause.assignments is None and ident.column.lower() in self._source_fields
            if named or starred:
                check_explicit_insert(ident, f"{clause.describe(index)}")

    def _assigned(self, index: int, clause: MergeClause) -> dict[str, str]:
        """The explicit assignments by the output column's name (a target-alias prefix allowed)."""
        if clause.assignments is None:
            return {}
        by_name = {f.name.lower(): f.name for f in self.struct.fields}
        prefix = f"{self.target_alias.lower()}."
        out: dict[str, str] = {}
        for key, sql in clause.assignments.items():
            bare = key.strip()
            if bare.lower().startswith(prefix):
                bare = bare[len(prefix) :]
            name = by_name.get(bare.strip("`").lower())
            if name is None:
                raise InvalidInputError(
                    f"{clause.describe(index)} assigns unknown column {key!r}; the table has: "
                    f"{', '.join(f.name for f in self.struct.fields)}"
                )
            if name in out:
                raise InvalidInputError(f"{clause.describe(index)} assigns column {name!r} more than once")
            out[name] = sql
        return out

    # --- checks -------------------------------------------------------------

    def validate(self, *, inserts_beside_targets: bool = False) -> None:
        """Analyse the join condition and every clause against empty frames; no job runs.

        A clause is analysed against the side it sees, and, where it runs
        beside the other side's columns (``not_matched_by_source`` always,
        ``not_matched`` with ``inserts_beside_targets``), against the joined
        frame too, so that a column both sides have must be qualified."""
        target = self.target(empty_frame(self.spark, self.table_struct))
        source = self.source(empty_frame(self.spark, self.source_struct))
        joined = analyse("join condition", self.on, partial(self._boolean_join, target, source))
        frames = {MATCHED: joined, NOT_MATCHED: source, NOT_MATCHED_BY_SOURCE: target}
        sides = {
            MATCHED: "",
            NOT_MATCHED: " (it sees only the source row)",
            NOT_MATCHED_BY_SOURCE: " (it sees only the target row)",
        }
        beside = {NOT_MATCHED_BY_SOURCE} | ({NOT_MATCHED} if inserts_beside_targets else set())
        for i, clause in enumerate(self.clauses):
            checks = [(frames[clause.when], f"{clause.describe(i)}{sides[clause.when]}")]
            if clause.when in beside:
                qualify = f"{clause.describe(i)} (it runs beside both sides' columns: qualify with {self.target_alias}. or {self.source_alias}.)"
                checks.append((joined, qualify))
            values = self._values[i] or {}
            for frame, what in checks:
                if clause.condition is not None:
                    analyse(f"condition of {what}", clause.condition, partial(self._boolean, frame, clause.condition))
                for name, sql in self._assigned(i, clause).items():
                    analyse(f"expression for {name} in {what}", sql, partial(_resolve, frame, [values[name]]))
                if clause.is_star:
                    analyse(f"{clause.action} * of {what}", "*", partial(_resolve, frame, list(values.values())))

    def _boolean_join(self, target: DataFrame, source: DataFrame) -> DataFrame:
        return self._boolean(self.join(target, source, "full"), self.on)

    @staticmethod
    def _boolean(frame: DataFrame, sql: str) -> DataFrame:
        dtype = frame.select(F.expr(sql).alias("c")).schema["c"].dataType
        if not isinstance(dtype, BooleanType):
            raise InvalidInputError(f"invalid condition {sql!r}: it is of type {dtype.simpleString()}, not boolean")
        return frame


def _resolve(frame: DataFrame, columns: list[Column]) -> Any:
    """Analyse ``columns`` over ``frame`` (no job runs)."""
    return frame.select(*columns).schema


__all__ = ["COPY", "SKIP", "MergeRows"]
