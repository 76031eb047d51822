"""SHALLOW CLONE: a new table that refers to another table's data files.

Follows delta-spark's ``CloneTableBase`` / ``CloneTableCommand``
(``CREATE [OR REPLACE] TABLE target SHALLOW CLONE source [VERSION AS OF n | TIMESTAMP AS OF ts]``):

1. the source at its latest version, a version or a timestamp (an unknown
   version or a folder that is not a Delta table is a typed error);
2. the target must not be a Delta table, unless ``replace`` (a non-Delta
   folder holding files is refused either way: VACUUM of the clone would
   take them for its own). A clone cannot replace its own source, nor lie
   inside it or hold it (same store, one root under the other);
3. the metadata is the source's, with a new table id (the target's id when
   it is replaced, and its name and description) and the table properties
   overrides merged in; coordinated-commits properties are never copied,
   nor the names of row tracking's materialized columns (the clone's row
   ids are its own: a new table names new columns, a replaced one keeps its own).
   Column mapping (the physical names in the schema and
   ``maxColumnId``) comes along, and its mode may not change. The protocol
   is the source's, raised to what the properties need (never below the
   replaced table's);
4. each of the source's ``add`` actions is copied with an absolute,
   URI-encoded path into the source's root, and a deletion vector stored
   next to the file (``u``) becomes an absolute one (``p``). Row ids and
   commit versions are not copied: a target with row tracking assigns its
   own. The clustering domain is copied;
5. one ``CLONE`` commit with delta-spark's ``operationParameters``
   (``source``, ``sourceVersion``) and ``operationMetrics``. With
   ``replace``, the target's files the clone does not hold are removed in
   the same commit, and the files it holds already (same path and deletion
   vector, compared canonically) are neither removed nor added again: change
   readers see no inserts for them and row ids stay (delta-spark refuses to
   replace a table that has files; here ``numRemovedFiles`` and
   ``removedFilesSize`` count the removed ones).

No data file is read, copied or written. The clone's log names the source's
files, so the clone reads them for as long as the source keeps them:
VACUUM on the clone never deletes a file outside its own root, but VACUUM
on the source deletes files the source no longer references, even if a
clone still does (``docs/clone.rst``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import Mapping

from airflow_delta_provider.delta import symlink_manifest
from airflow_delta_provider.delta.actions.deletion_vectors import relative_dv_path
from airflow_delta_provider.delta.actions.model import AddFile, DeletionVector, DomainMetadata, Metadata, Protocol
from airflow_delta_provider.delta.errors import InvalidInputError, TableAlreadyExistsError, UnsupportedFeatureError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.partitions import absolute_uri, encode_path
from airflow_delta_provider.delta.schema.types import schema_string
from airflow_delta_provider.delta.snapshot import Snapshot
from airflow_delta_provider.delta.storage.location import TableLocation
from airflow_delta_provider.delta.table import DeltaTable
from airflow_delta_provider.delta.table_features import clustering, column_mapping, row_tracking
from airflow_delta_provider.delta.table_features import identity_columns as identity
from airflow_delta_provider.delta.table_features.gate import merge_protocols, protocol_for
from airflow_delta_provider.delta.transaction.transaction import CommitResult
from airflow_delta_provider.operations.clone.metrics import CloneMetrics

OPERATION = "CLONE"
#: Table properties a clone never copies (delta-spark: coordinated commits, Unity Catalog's table id).
_NOT_COPIED_PREFIXES = ("delta.coordinatedCommits.", "io.unitycatalog.")
#: The domains a clone copies from its source (delta-spark's ``METADATA_DOMAIN_TO_COPY_FOR_CLONE_TABLE``).
COPIED_DOMAINS = (clustering.DOMAIN,)


@dataclasses.dataclass
class ClonePlan:
    """What a CLONE commits: the source version, the target's new state, the
    files it adds (with ``replace``, only those not live in the target
    already) and the files it drops."""

    source: Snapshot
    source_name: str
    target: Snapshot | None
    metadata: Metadata
    protocol: Protocol
    adds: list[AddFile]
    removed: list[AddFile]
    domains: list[DomainMetadata]

    def metrics(self) -> CloneMetrics:
        """delta-spark's CLONE ``operationMetrics`` (a shallow clone copies no file)."""
        return CloneMetrics(
            source_table_size=self.source.size_in_bytes,
            source_num_of_files=self.source.num_files,
            num_removed_files=len(self.removed),
            num_copied_files=0,
            removed_files_size=sum(f.size for f in self.removed),
            copied_files_size=0,
        )

    def parameters(self) -> dict[str, object]:
        """delta-spark's CLONE ``operationParameters``."""
        return {"source": self.source_name, "sourceVersion": self.source.version}


def source_name(location: TableLocation) -> str:
    """How delta-spark names a path-based source: ``delta.`<qualified path>```
    (``file:/...``, ``s3a://...``; an Azure root without its account keeps ``az://``)."""
    if location.is_local:
        return f"delta.{quote_identifier('file:' + location.path)}"
    return f"delta.{quote_identifier(location.spark_uri() if location.scheme != 'az' or location.account else location.uri)}"


def plan_clone(
    source: DeltaTable,
    target: DeltaTable,
    version: int | None = None,
    timestamp: dt.datetime | str | int | None = None,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
) -> ClonePlan:
    """The CLONE of ``source`` (at ``version`` or ``timestamp``) into ``target``; nothing is written."""
    _check_apart(source.storage.location, target.storage.location)
    source.storage.location.qualified_uri()  # an Azure source without its account: refused before any read
    snapshot = source.snapshot(version=None if version is None else int(version), timestamp=timestamp)
    existing = _target_snapshot(target, replace)
    metadata = _target_metadata(snapshot.metadata, existing, dict(properties or {}))
    protocol = snapshot.protocol if existing is None else merge_protocols(existing.protocol, snapshot.protocol)
    symlink_manifest.check_files(metadata, snapshot.files, f"cannot clone {source.uri}")
    root = source.storage.location
    adds = [_absolute_add(f, root) for f in snapshot.files]
    copied = {d: m for d, m in snapshot.domain_metadata.items() if d in COPIED_DOMAINS and not m.removed}
    dropped = [] if existing is None else [
        dataclasses.replace(m, removed=True)
        for d, m in existing.domain_metadata.items()
        if d in COPIED_DOMAINS and d not in copied and not m.removed
    ]  # fmt: skip
    return ClonePlan(
        source=snapshot,
        source_name=source_name(root),
        target=existing,
        metadata=metadata,
        protocol=protocol_for(protocol, metadata),
        adds=adds if existing is None else _new(existing, target.root, adds),
        removed=[] if existing is None else _dropped(existing, target.root, adds),
        domains=[*copied.values(), *dropped],
    )


def clone_table(
    source: DeltaTable,
    target: DeltaTable,
    version: int | None = None,
    timestamp: dt.datetime | str | int | None = None,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    token: str | None = None,
) -> tuple[CommitResult, ClonePlan]:
    """SHALLOW CLONE ``source`` into ``target``; the commit and its plan."""
    plan = plan_clone(source, target, version, timestamp, replace, properties)
    txn = target.transaction(OPERATION, parameters=plan.parameters(), snapshot=plan.target)
    txn.read_whole_table()  # not a blind append, as delta-spark records it
    txn.update_metadata(plan.metadata)
    if plan.target is None or plan.protocol != plan.target.protocol:
        txn.update_protocol(plan.protocol)
    for domain in plan.domains:
        txn.set_domain(domain)
    now = int(time.time() * 1000)
    txn.add_all([*(f.remove(now) for f in plan.removed), *plan.adds])
    return txn.commit(metrics=plan.metrics().commit_metrics(), token=token), plan


def _check_apart(source: TableLocation, target: TableLocation) -> None:
    """Refuse a target that is the source, or lies inside it, or holds it:
    each table would take the other's files (and log) for its own."""
    same_store = (source.scheme, source.bucket) == (target.scheme, target.bucket) and (
        not source.account or not target.account or source.account == target.account
    )
    if not same_store:
        return
    if source.path == target.path:
        raise InvalidInputError(f"cannot clone {source.uri} into itself")
    if source.relative(target) is not None:
        raise InvalidInputError(
            f"cannot clone {source.uri} into {target.uri}: the target lies inside the source table's folder"
        )
    if target.relative(source) is not None:
        raise InvalidInputError(
            f"cannot clone {source.uri} into {target.uri}: the source lies inside the target's folder"
        )


def _target_snapshot(target: DeltaTable, replace: bool) -> Snapshot | None:
    """The table the clone replaces, or None for a new one (whose folder must hold no file)."""
    if target.exists():
        if not replace:
            raise TableAlreadyExistsError(
                f"{target.uri} is a Delta table already: give replace (CREATE OR REPLACE ... CLONE) to replace it"
            )
        return target.snapshot()
    files, dirs = target.storage.list_top("")
    if files or dirs:
        found = sorted(m.path for m in [*files, *dirs])
        raise InvalidInputError(
            f"{target.uri} is not empty ({', '.join(found[:3])}{' ...' if len(found) > 3 else ''}) and is not a "
            "Delta table: a clone needs an empty location"
        )
    return None


def _file_key(f: AddFile, canonical: PathCanonicalizer) -> tuple[str, str | None]:
    """One file's identity in the target, whatever spelling names it: its
    canonical path, and its deletion vector's canonical location and offset
    (an inline vector by its own id)."""
    dv = f.deletion_vector
    if dv is None or dv.storage_type == "i":
        return canonical(f.path), f.dv_id
    where = encode_path(relative_dv_path(dv)) if dv.storage_type == "u" else dv.path_or_inline_dv
    return canonical(f.path), f"{canonical(where)}@{dv.offset}"


def _new(existing: Snapshot, target_root: str, adds: list[AddFile]) -> list[AddFile]:
    """The clone's files not live in the replaced table already: a file it
    holds with the same deletion vector stays as it is (re-adding it with
    ``dataChange`` would show its rows to change readers as inserted again,
    and give them new row ids)."""
    canonical = PathCanonicalizer(target_root)
    live = {_file_key(f, canonical) for f in existing.files}
    return [f for f in adds if _file_key(f, canonical) not in live]


def _dropped(existing: Snapshot, target_root: str, adds: list[AddFile]) -> list[AddFile]:
    """The replaced table's files the clone does not hold (with the same
    deletion vector): removed in the clone's commit."""
    canonical = PathCanonicalizer(target_root)
    kept = {_file_key(f, canonical) for f in adds}
    return [f for f in existing.files if _file_key(f, canonical) not in kept]


def _target_metadata(source: Metadata, existing: Snapshot | None, properties: dict[str, str]) -> Metadata:
    """The source's metadata as the target's (delta-spark's ``prepareSourceMetadata``)."""
    configuration = {
        k: v
        for k, v in source.configuration.items()
        if not k.startswith(_NOT_COPIED_PREFIXES) and k not in row_tracking.MATERIALIZED_KEYS
    }
    configuration.update(properties)
    if column_mapping.MAX_ID_KEY in properties:
        raise InvalidInputError(f"{column_mapping.MAX_ID_KEY} is set by the table, not by a CLONE's properties")
    mode = column_mapping.mode_of(configuration)
    before = [("source", column_mapping.mode_of(source.configuration))]
    if existing is not None:
        before.append(("replaced table", column_mapping.mode_of(existing.metadata.configuration)))
    for what, old in before:
        if old != mode:
            raise UnsupportedFeatureError(
                f"CLONE cannot change {column_mapping.MODE_KEY} from {old} ({what}) to {mode}: the files' "
                "column names would no longer match"
            )
    metadata = dataclasses.replace(
        source,
        id=str(uuid.uuid4()) if existing is None else existing.metadata.id,
        name=None if existing is None else existing.metadata.name,
        description=None if existing is None else existing.metadata.description,
        configuration=configuration,
    )
    if existing is not None:
        schema = identity.keep_high_water_marks(metadata.schema_json, existing.metadata.schema_json)
        if schema != metadata.schema_json:
            metadata = dataclasses.replace(metadata, schema_string=schema_string(schema))
    return metadata


def _absolute_add(add: AddFile, root: TableLocation) -> AddFile:
    """A source file as the clone's add: its path and deletion vector absolute,
    its row ids and commit version dropped, its stats as JSON."""
    dv = add.deletion_vector
    if dv is not None and dv.storage_type == "u":
        dv = DeletionVector(
            storage_type="p",
            path_or_inline_dv=absolute_uri(root, relative_dv_path(dv)),
            size_in_bytes=dv.size_in_bytes,
            cardinality=dv.cardinality,
            offset=dv.offset,
            max_row_index=dv.max_row_index,
        )
    return dataclasses.replace(
        add,
        path=absolute_uri(root, add.path),
        deletion_vector=dv,
        data_change=True,
        stats=add.stats_json(),
        stats_parsed=None,
        base_row_id=None,
        default_row_commit_version=None,
    )


__all__ = ["COPIED_DOMAINS", "OPERATION", "ClonePlan", "clone_table", "plan_clone", "source_name"]
