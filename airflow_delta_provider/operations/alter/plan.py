"""ALTER TABLE as metadata-only commits: add, rename and drop columns,
change a column's comment or nullability, set and unset table properties,
add and drop CHECK constraints.

Each change is a value (:class:`AddColumns`, :class:`RenameColumn`, ...)
that turns the table's ``metaData`` into the new one, checked against
delta-spark's rules; :func:`alter_table` commits it under delta-spark's
operation name and parameters. No data file is read or written:

- RENAME COLUMN and DROP COLUMNS need column mapping (the files keep their
  physical names, so the old data reads right under the new schema). On a
  table without it they are refused, unless the caller asks to turn it on
  (``enable_column_mapping``): the same commit then sets
  ``delta.columnMapping.mode = name``, every existing column keeping its
  name as its physical name, and the protocol moves to reader 2 / writer 5.
- ADD COLUMNS gives new columns ids and physical names on a mapped table.
- ADD CONSTRAINT records ``delta.constraints.<name>`` (:mod:`.constraints`);
  the engine must have checked the rows first, so its commit counts as a read
  of the whole table and a concurrent append conflicts with it. A column a
  constraint reads cannot be renamed or dropped.
- CLUSTER BY (cols) sets the ``delta.clustering`` domain (the table then
  lists the ``clustering`` feature), CLUSTER BY NONE empties it; on a table
  that is not clustered, NONE commits nothing, as delta-spark's
  ``AlterTableClusterByDeltaCommand``. A partitioned table is refused.
- A change conflicts with concurrent commits as any metadata change does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError, SchemaMismatchError, UnsupportedFeatureError
from airflow_delta_provider.delta.schema.arrow import to_arrow_type
from airflow_delta_provider.delta.schema.fields import walk_fields
from airflow_delta_provider.delta.schema.names import check_column_names, check_unique_names
from airflow_delta_provider.delta.schema.types import (
    FieldPath,
    format_path,
    kind_of,
    normalize_type,
    schema_string,
    struct_field,
    struct_type,
)
from airflow_delta_provider.delta.table_features import check_constraints as constraints
from airflow_delta_provider.delta.table_features import clustering, column_mapping
from airflow_delta_provider.operations.alter.changes import ALTER_CHANGES
from airflow_delta_provider.operations.alter.drop_feature import DropFeature, FileRewrite, drop_feature

if TYPE_CHECKING:
    from airflow_delta_provider.delta.snapshot import Snapshot
    from airflow_delta_provider.delta.table import DeltaTable
    from airflow_delta_provider.delta.transaction.transaction import CommitResult

_PATH_PART = re.compile(r"`((?:[^`]|``)*)`|([^.`]+)")


def parse_column_path(text: str) -> FieldPath:
    """``a.b`` -> ``("a", "b")``; a part in backticks may hold dots
    (```a.b`.c`` -> ``("a.b", "c")``), a doubled backtick is one."""
    parts: list[str] = []
    pos = 0
    text = text.strip()
    while True:
        m = _PATH_PART.match(text, pos)
        if not m:
            raise InvalidInputError(f"invalid column path {text!r}")
        parts.append(m.group(1).replace("``", "`") if m.group(1) is not None else m.group(2).strip())
        pos = m.end()
        if pos == len(text):
            return tuple(parts)
        if text[pos] != ".":
            raise InvalidInputError(f"invalid column path {text!r}")
        pos += 1


def _path(value: str | Sequence[str]) -> FieldPath:
    return parse_column_path(value) if isinstance(value, str) else tuple(value)


# --- Finding fields --------------------------------------------------------------


def _struct_at(schema: dict[str, Any], parent: FieldPath, whole: FieldPath) -> dict[str, Any]:
    """The struct type holding the fields under ``parent`` (``()``: the table)."""
    struct = schema
    for i, part in enumerate(parent):
        f = _field_in(struct, part)
        if f is None:
            raise SchemaMismatchError(f"column {format_path(whole[: i + 1])} does not exist; columns: {_names(struct)}")
        if not (isinstance(f["type"], dict) and f["type"].get("type") == "struct"):
            raise InvalidInputError(f"column {format_path(whole[: i + 1])} is not a struct")
        struct = f["type"]
    return struct


def _field_in(struct: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    fields = struct.get("fields", [])
    return next((f for f in fields if f["name"] == name), None) or next(
        (f for f in fields if f["name"].lower() == name.lower()), None
    )


def _names(struct: Mapping[str, Any]) -> str:
    return ", ".join(f["name"] for f in struct.get("fields", ()))


def _existing(schema: dict[str, Any], path: FieldPath) -> dict[str, Any]:
    struct = _struct_at(schema, path[:-1], path)
    f = _field_in(struct, path[-1])
    if f is None:
        raise SchemaMismatchError(f"column {format_path(path)} does not exist; columns: {_names(struct)}")
    return f


def _is_partition(metadata: Metadata, path: FieldPath) -> bool:
    return len(path) == 1 and path[0].lower() in {c.lower() for c in metadata.partition_columns}


def _invariant_references(schema: Mapping[str, Any], name: str) -> list[str]:
    """Columns whose ``delta.invariants`` expression names column ``name``."""
    from airflow_delta_provider.delta.expressions.parse import column_references, parse_sql

    found = []
    for path, f in walk_fields(schema):
        raw = (f.get("metadata") or {}).get("delta.invariants")
        if not raw:
            continue
        try:
            tree = parse_sql(json.loads(raw)["expression"]["expression"])
        except (ValueError, KeyError, TypeError):  # unreadable: writes check it, not this
            continue
        if tree is None:
            continue
        columns = {parts[-1].lower() for parts in column_references(tree)}
        if name.lower() in columns:
            found.append(format_path(path))
    return found


# --- The changes ------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaChange:
    """One ALTER TABLE change: the operation name delta-spark logs, its
    parameters, and the metadata it leaves."""

    operation = ""

    def parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    def apply(self, metadata: Metadata) -> Metadata:
        raise NotImplementedError

    needs_column_mapping = False


@dataclass(frozen=True)
class NewColumn:
    """A column for :class:`AddColumns`: ``path`` names it (a nested field's
    path goes through structs), ``type`` is a Delta type (``"long"``,
    ``"decimal(10,2)"``, or the JSON form of a struct, array or map)."""

    path: str | Sequence[str]
    type: Any
    nullable: bool = True
    comment: str | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NewColumn:
        unknown = set(d) - {"name", "type", "nullable", "comment"}
        if unknown or "name" not in d or "type" not in d:
            raise InvalidInputError(
                f"a new column is {{'name', 'type', 'nullable'?, 'comment'?}}; got {json.dumps(dict(d))}"
            )
        return cls(d["name"], d["type"], _boolean(d.get("nullable", True), "nullable"), d.get("comment"))

    def field(self) -> dict[str, Any]:
        metadata = {"comment": self.comment} if self.comment is not None else {}
        try:
            # Ids and physical names are the table's to give, never the caller's.
            delta_type = column_mapping.strip(struct_type([struct_field("t", normalize_type(self.type))]))
            delta_type = delta_type["fields"][0]["type"]
            to_arrow_type(delta_type)  # refuses a type that is not Delta's
        except (InvalidInputError, UnsupportedFeatureError, KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"column {format_path(_path(self.path))}: invalid type {self.type!r}") from exc
        return {"name": _path(self.path)[-1], "type": delta_type, "nullable": self.nullable, "metadata": metadata}


def _logged_field(column: NewColumn) -> dict[str, Any]:
    """A new column as delta-spark's history records it (``DeltaOperations.structFieldToMap``): its
    full path as the name, and the type's name ("struct" for a struct) rather than the type."""
    f = column.field()
    kind = kind_of(f["type"])
    return {
        "name": format_path(_path(column.path)),
        "type": f["type"] if kind == "primitive" else kind,
        "nullable": f["nullable"],
        "metadata": f["metadata"],
    }


@dataclass(frozen=True)
class AddColumns(SchemaChange):
    """ADD COLUMNS: new nullable columns at the end of the table or of a
    struct. NOT NULL is refused, as in delta-spark: existing rows would
    break it."""

    columns: tuple[NewColumn, ...]
    operation = "ADD COLUMNS"

    def parameters(self) -> dict[str, Any]:
        return {"columns": json.dumps([{"column": _logged_field(c)} for c in self.columns])}

    def apply(self, metadata: Metadata) -> Metadata:
        if not self.columns:
            raise InvalidInputError("ADD COLUMNS needs at least one column")
        schema = metadata.schema_json
        for c in self.columns:
            path = _path(c.path)
            if not _boolean(c.nullable, "nullable"):
                raise InvalidInputError(
                    f"cannot add column {format_path(path)} as NOT NULL: the table's existing rows have no value for it"
                )
            struct = _struct_at(schema, path[:-1], path)
            if _field_in(struct, path[-1]) is not None:
                raise SchemaMismatchError(f"column {format_path(path)} already exists (names are case-insensitive)")
            struct["fields"].append(c.field())
        return _with_schema(metadata, schema)


@dataclass(frozen=True)
class RenameColumn(SchemaChange):
    """RENAME COLUMN (needs column mapping): a top-level or nested column
    gets a new name; a renamed partition column stays the partition column."""

    path: str | Sequence[str]
    new_name: str
    operation = "RENAME COLUMN"
    needs_column_mapping = True

    def parameters(self) -> dict[str, Any]:
        old = _path(self.path)
        return {"oldColumnPath": format_path(old), "newColumnPath": format_path((*old[:-1], self.new_name))}

    def apply(self, metadata: Metadata) -> Metadata:
        path = _path(self.path)
        if not self.new_name:
            raise InvalidInputError("the new column name must not be empty")
        schema = metadata.schema_json
        f = _existing(schema, path)
        clash = _field_in(_struct_at(schema, path[:-1], path), self.new_name)
        if clash is not None and clash is not f:
            raise SchemaMismatchError(
                f"cannot rename {format_path(path)} to {self.new_name!r}: column {clash['name']!r} exists "
                "(names are case-insensitive)"
            )
        users = [u for u in _invariant_references(schema, path[-1]) if len(path) == 1]
        if users:
            raise InvalidInputError(f"cannot rename {format_path(path)}: the invariants of {', '.join(users)} use it")
        _refuse_if_constrained(metadata, path, "rename")
        old_name = f["name"]
        f["name"] = self.new_name
        partition_columns = metadata.partition_columns
        if _is_partition(metadata, path):
            partition_columns = tuple(self.new_name if c.lower() == old_name.lower() else c for c in partition_columns)
        configuration = _stats_columns(metadata.configuration, path, (*path[:-1], self.new_name))
        return replace(_with_schema(metadata, schema), partition_columns=partition_columns, configuration=configuration)


@dataclass(frozen=True)
class DropColumns(SchemaChange):
    """DROP COLUMNS (needs column mapping). A partition column, every
    column of the table, or every field of a struct cannot be dropped."""

    paths: tuple[str | Sequence[str], ...]
    operation = "DROP COLUMNS"
    needs_column_mapping = True

    def parameters(self) -> dict[str, Any]:
        return {"columns": json.dumps([format_path(_path(p)) for p in self.paths])}

    def apply(self, metadata: Metadata) -> Metadata:
        if not self.paths:
            raise InvalidInputError("DROP COLUMNS needs at least one column")
        schema = metadata.schema_json
        for raw in self.paths:
            path = _path(raw)
            if _is_partition(metadata, path):
                raise InvalidInputError(f"cannot drop partition column {format_path(path)}")
            f = _existing(schema, path)
            users = [u for u in _invariant_references(schema, path[-1]) if len(path) == 1 and u != format_path(path)]
            if users:
                raise InvalidInputError(f"cannot drop {format_path(path)}: the invariants of {', '.join(users)} use it")
            _refuse_if_constrained(metadata, path, "drop")
            struct = _struct_at(schema, path[:-1], path)
            struct["fields"] = [g for g in struct["fields"] if g is not f]
            if not struct["fields"]:
                what = "the table" if len(path) == 1 else f"struct {format_path(path[:-1])}"
                raise InvalidInputError(f"cannot drop {format_path(path)}: it is the last column of {what}")
        if len(schema["fields"]) == len(metadata.partition_columns):
            raise InvalidInputError("cannot drop every data column: data files would hold no column")
        configuration = metadata.configuration
        for raw in self.paths:
            configuration = _stats_columns(configuration, _path(raw), None)
        return replace(_with_schema(metadata, schema), configuration=configuration)


@dataclass(frozen=True)
class AlterColumn(SchemaChange):
    """CHANGE COLUMN: a new comment, or NOT NULL dropped (``nullable=True``).
    Making a nullable column NOT NULL is refused: the data is not checked."""

    path: str | Sequence[str]
    comment: str | None = None
    nullable: bool | None = None
    operation = "CHANGE COLUMN"

    def parameters(self) -> dict[str, Any]:
        return {"column": format_path(_path(self.path)), "comment": self.comment, "nullable": self.nullable}

    def apply(self, metadata: Metadata) -> Metadata:
        if self.comment is None and self.nullable is None:
            raise InvalidInputError("CHANGE COLUMN needs a comment or a nullability to set")
        if self.nullable is not None:
            _boolean(self.nullable, "nullable")
        path = _path(self.path)
        schema = metadata.schema_json
        f = _existing(schema, path)
        if self.nullable is False and f.get("nullable", True):
            raise InvalidInputError(
                f"cannot make {format_path(path)} NOT NULL: existing rows are not checked; add a new NOT NULL "
                "column by overwriting the table instead"
            )
        if self.nullable:
            f["nullable"] = True
        if self.comment is not None:
            f["metadata"] = {**(f.get("metadata") or {}), "comment": self.comment}
        return _with_schema(metadata, schema)


@dataclass(frozen=True)
class SetProperties(SchemaChange):
    """SET TBLPROPERTIES; ``delta.*`` keys must be ones we honour."""

    properties: Mapping[str, str] = field(default_factory=dict)
    operation = "SET TBLPROPERTIES"

    def parameters(self) -> dict[str, Any]:
        return {"properties": json.dumps(dict(self.properties))}

    def apply(self, metadata: Metadata) -> Metadata:
        if not self.properties:
            raise InvalidInputError("SET TBLPROPERTIES needs at least one property")
        return table_properties.with_properties(metadata, self.properties)


@dataclass(frozen=True)
class UnsetProperties(SchemaChange):
    """UNSET TBLPROPERTIES; a key the table lacks is an error unless
    ``if_exists``. Column mapping's own keys cannot be unset."""

    keys: tuple[str, ...]
    if_exists: bool = False
    operation = "UNSET TBLPROPERTIES"

    def parameters(self) -> dict[str, Any]:
        return {"properties": json.dumps(list(self.keys)), "ifExists": self.if_exists}

    def apply(self, metadata: Metadata) -> Metadata:
        if not self.keys:
            raise InvalidInputError("UNSET TBLPROPERTIES needs at least one key")
        configuration = dict(metadata.configuration)
        for key in self.keys:
            if key.startswith("delta.columnMapping."):
                raise UnsupportedFeatureError(f"cannot unset {key}: column mapping cannot be turned off")
            if key.startswith(constraints.PREFIX):
                raise InvalidInputError(f"cannot unset {key}: drop the constraint with drop_constraint")
            if key not in configuration and not self.if_exists:
                raise InvalidInputError(f"cannot unset {key}: the table has no such property")
            configuration.pop(key, None)
        return replace(metadata, configuration=configuration)


@dataclass(frozen=True)
class AddConstraint(SchemaChange):
    """ADD CONSTRAINT ``name`` CHECK (``expression``). The caller has checked
    the expression and that every row satisfies it (the engine's job)."""

    name: str
    expression: str
    operation = "ADD CONSTRAINT"

    def parameters(self) -> dict[str, Any]:
        return {"name": constraints.check_name(self.name), "expr": self.expression}

    def apply(self, metadata: Metadata) -> Metadata:
        name = constraints.check_name(self.name)
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise InvalidInputError(f"constraint {name} needs a non-empty SQL expression")
        existing = constraints.find(metadata, name)
        if existing is not None:
            raise InvalidInputError(f"constraint {existing[0]} already exists: {existing[1]}; drop it first")
        return replace(metadata, configuration={**metadata.configuration, constraints.PREFIX + name: self.expression})


@dataclass(frozen=True)
class DropConstraint(SchemaChange):
    """DROP CONSTRAINT [IF EXISTS] ``name``."""

    name: str
    if_exists: bool = False
    operation = "DROP CONSTRAINT"

    def parameters(self) -> dict[str, Any]:
        return {"name": constraints.check_name(self.name)}

    def apply(self, metadata: Metadata) -> Metadata:
        name = constraints.check_name(self.name)
        found = constraints.find(metadata, name)
        if found is None:
            if self.if_exists:
                return metadata
            known = ", ".join(sorted(constraints.table_constraints(metadata))) or "none"
            raise InvalidInputError(
                f"cannot drop constraint {name}: the table has no such constraint (it has: {known})"
            )
        configuration = dict(metadata.configuration)
        del configuration[constraints.PREFIX + found[0]]
        return replace(metadata, configuration=configuration)


@dataclass(frozen=True)
class ClusterBy(SchemaChange):
    """ALTER TABLE CLUSTER BY (``columns``), or NONE when empty: a domain change
    that :func:`alter_table` commits (the metadata stays as it is)."""

    columns: tuple[str, ...]
    operation = "CLUSTER BY"

    def apply(self, metadata: Metadata) -> Metadata:
        return metadata


def _cluster_by(table: DeltaTable, snapshot: Snapshot, change: ClusterBy, token: str | None) -> CommitResult | None:
    """Commit the ``delta.clustering`` domain ``change`` asks for, with
    delta-spark's ``CLUSTER BY`` parameters (old and new logical columns,
    comma-joined); None for NONE on a table that is not clustered."""
    old = [format_path(c) for c in clustering.clustering_columns(snapshot)]
    if not change.columns and not clustering.is_clustered(snapshot.domain_metadata):
        return None
    metadata = snapshot.metadata
    columns = clustering.check_columns(
        metadata.schema_json, metadata.partition_columns, metadata.configuration, change.columns
    )
    if clustering.is_clustered(snapshot.domain_metadata) and [c.lower() for c in columns] == [c.lower() for c in old]:
        raise InvalidInputError(f"CLUSTER BY changes nothing: the table is clustered by {old or 'nothing'} already")
    mapping = snapshot.column_mapping
    domain = clustering.domain_action([mapping.physical_column(c) if mapping.enabled else c for c in columns])
    parameters = {"oldClusteringColumns": ",".join(old), "newClusteringColumns": ",".join(columns)}
    txn = table.transaction(change.operation, parameters=parameters, snapshot=snapshot)
    txn.set_domain(domain)
    return txn.commit(metrics={}, token=token)


def _refuse_if_constrained(metadata: Metadata, path: FieldPath, verb: str) -> None:
    users = constraints.constraints_reading(metadata, path[0])  # a nested field: its top-level column
    if users:
        raise InvalidInputError(f"cannot {verb} {format_path(path)}: CHECK constraint(s) {', '.join(users)} read it")


def _refuse_clustering_columns(snapshot: Snapshot, change: DropColumns) -> None:
    clustered = {tuple(p.lower() for p in c) for c in clustering.clustering_columns(snapshot)}
    for raw in change.paths:
        path = _path(raw)
        if tuple(p.lower() for p in path) in clustered:
            raise InvalidInputError(f"cannot drop {format_path(path)}: the table is clustered by it")


def _stats_columns(configuration: Mapping[str, str], old: FieldPath, new: FieldPath | None) -> dict[str, str]:
    """``configuration`` with ``delta.dataSkippingStatsColumns`` following a
    rename of ``old`` to ``new`` (None: a drop), as delta-spark keeps it."""
    key = table_properties.STATS_COLUMNS
    listed = configuration.get(key)
    if not listed:
        return dict(configuration)
    lowered = tuple(p.lower() for p in old)
    kept = []
    for entry in (e.strip() for e in listed.split(",") if e.strip()):
        path = parse_column_path(entry)
        if tuple(p.lower() for p in path[: len(old)]) != lowered:
            kept.append(entry)
        elif new is not None:
            kept.append(format_path((*new, *path[len(old) :])))
    out = dict(configuration)
    if kept:
        out[key] = ",".join(kept)
    else:
        out.pop(key)
    return out


def _with_schema(metadata: Metadata, schema: dict[str, Any]) -> Metadata:
    return replace(metadata, schema_string=schema_string(schema))


# --- Committing ---------------------------------------------------------------------


def plan(metadata: Metadata, change: SchemaChange, *, enable_column_mapping: bool = False) -> Metadata:
    """The metadata ``change`` leaves (nothing is written): mapping turned on
    first when asked, the change applied, new columns given ids, and the
    result checked against the schema rules."""
    mode = column_mapping.mode_of(metadata.configuration)
    before = metadata
    if change.needs_column_mapping and mode == column_mapping.NONE:
        if not enable_column_mapping:
            raise UnsupportedFeatureError(
                f"{change.operation} needs column mapping, and the table has none; turn it on with "
                f"enable_column_mapping (sets {column_mapping.MODE_KEY}=name; readers then need reader "
                "version 2 and column mapping support)"
            )
        metadata = table_properties.with_properties(metadata, {column_mapping.MODE_KEY: column_mapping.NAME})
        metadata = column_mapping.apply(metadata, before)
    changed = change.apply(metadata)
    changed = column_mapping.apply(changed, before)
    schema = changed.schema_json
    if column_mapping.mode_of(changed.configuration) == column_mapping.NONE:
        check_column_names(schema)
    else:
        check_unique_names(schema)  # any character is allowed under mapping
    if changed == before and not (isinstance(change, DropConstraint) and change.if_exists):
        raise InvalidInputError(f"{change.operation} changes nothing")
    return changed


def alter_table(
    table: DeltaTable,
    change: SchemaChange | DropFeature,
    *,
    enable_column_mapping: bool = False,
    token: str | None = None,
    snapshot: Snapshot | None = None,
    rewrite: FileRewrite | None = None,
) -> CommitResult | None:
    """Commit ``change`` to ``table`` (a DeltaTable) as one metadata-only
    commit; its CommitResult, or None when it changes nothing (dropping a
    constraint that is not there, with ``if_exists``). ``snapshot`` is the
    version the change is made to (default: the latest), for a caller that
    checked rows at it. ``rewrite``: the engine's file rewrite a DROP FEATURE
    may need (:mod:`.drop_feature`). Bad input raises before anything is written."""
    if isinstance(change, DropFeature):
        return drop_feature(table, change, token=token, rewrite=rewrite)
    snapshot = table.snapshot() if snapshot is None else snapshot
    if isinstance(change, ClusterBy):
        return _cluster_by(table, snapshot, change, token)
    if isinstance(change, DropColumns):
        _refuse_clustering_columns(snapshot, change)
    metadata = plan(snapshot.metadata, change, enable_column_mapping=enable_column_mapping)
    if metadata == snapshot.metadata:  # DROP CONSTRAINT IF EXISTS of none
        return None
    txn = table.transaction(change.operation, parameters=change.parameters(), snapshot=snapshot)
    if isinstance(change, AddConstraint):
        txn.read_whole_table()  # rows appended since the check would escape it
    txn.update_metadata(metadata)
    return txn.commit(metrics={}, token=token)


def change_from_json(spec: Mapping[str, Any]) -> SchemaChange | DropFeature:
    """A change from its JSON form (the CLI's and the operator's):
    ``{"add_columns": [{"name", "type", "nullable"?, "comment"?}, ...]}``,
    ``{"rename_column": {"column", "to"}}``, ``{"drop_columns": [...]}``,
    ``{"alter_column": {"column", "comment"?, "nullable"?}}``,
    ``{"set_properties": {...}}``, ``{"unset_properties": [...], "if_exists"?}``,
    ``{"add_constraint": {"name", "expression"}}``, ``{"drop_constraint": {"name", "if_exists"?}}``,
    ``{"cluster_by": ["a", "b"]}``, ``{"cluster_by": "none"}`` (or ``[]``),
    ``{"drop_feature": {"name", "truncate_history"?}}`` (:mod:`.drop_feature`)."""
    kinds = [k for k in spec if k in ALTER_CHANGES]
    extra = set(spec) - set(ALTER_CHANGES) - {"if_exists"}
    if len(kinds) != 1 or extra:
        raise InvalidInputError(
            f"a schema change names exactly one of {', '.join(ALTER_CHANGES)}; got {json.dumps(dict(spec))}"
        )
    kind = kinds[0]
    value = spec[kind]
    try:
        if kind == "add_columns":
            return AddColumns(tuple(NewColumn.from_json(c) for c in _list(value, kind)))
        if kind == "rename_column":
            return RenameColumn(value["column"], value["to"])
        if kind == "drop_columns":
            return DropColumns(tuple(_list(value, kind)))
        if kind == "alter_column":
            nullable = value.get("nullable")
            return AlterColumn(
                value["column"], value.get("comment"), None if nullable is None else _boolean(nullable, "nullable")
            )
        if kind == "set_properties":
            if not isinstance(value, Mapping):
                raise InvalidInputError("set_properties takes an object of key: value")
            return SetProperties({str(k): str(v) for k, v in value.items()})
        if kind == "add_constraint":
            return AddConstraint(value["name"], value["expression"])
        if kind == "cluster_by":
            if isinstance(value, str) and value.strip().lower() == "none":
                return ClusterBy(())
            return ClusterBy(tuple(str(c) for c in _list(value, kind)))
        if kind == "drop_feature":
            return DropFeature(str(value["name"]), _boolean(value.get("truncate_history", False), "truncate_history"))
        if kind == "drop_constraint":
            return DropConstraint(value["name"], _boolean(value.get("if_exists", False), "if_exists"))
        return UnsetProperties(tuple(_list(value, kind)), _boolean(spec.get("if_exists", False), "if_exists"))
    except (KeyError, TypeError) as exc:
        raise InvalidInputError(f"invalid {kind} change {json.dumps(value)}: missing or wrong {exc}") from None


def _boolean(value: Any, name: str) -> bool:
    """A JSON boolean; a string such as "false" (templating makes them) is refused."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false (a JSON boolean), got {value!r}")
    return value


def _list(value: Any, kind: str) -> Iterable[Any]:
    if not isinstance(value, list):
        raise InvalidInputError(f"{kind} takes a list")
    return value


__all__ = [
    "AddColumns",
    "AddConstraint",
    "AlterColumn",
    "ClusterBy",
    "DropColumns",
    "DropConstraint",
    "DropFeature",
    "NewColumn",
    "RenameColumn",
    "SchemaChange",
    "SetProperties",
    "UnsetProperties",
    "alter_table",
    "change_from_json",
    "parse_column_path",
    "plan",
]
