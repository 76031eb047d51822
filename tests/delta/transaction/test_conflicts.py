"""Unit tests for ``delta/conflicts.py``: delta-spark's checks, one winner at a time.

These call :func:`check_conflicts` directly with a hand-made read set and
winning commit; ``test_transaction.py`` runs the same races through real
commits.
"""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.actions.model import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from airflow_delta_provider.delta.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)
from airflow_delta_provider.delta.log.replay import PathCanonicalizer
from airflow_delta_provider.delta.scan.skipping import Predicate
from airflow_delta_provider.delta.transaction.conflicts import ReadSet, WinningCommit, check_conflicts

ROOT = "/data/t"
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def read_set(**kw) -> ReadSet:
    base = dict(
        read_version=3,
        isolation_level="Serializable",
        is_blind_append=False,
        read_whole_table=False,
        read_predicates=[],
        read_paths=set(),
        removed_paths=set(),
        read_app_ids=set(),
        changes_metadata=False,
        changes_protocol=False,
        domains=set(),
        schema=SCHEMA,
        partition_columns=["p"],
        canonical=PathCanonicalizer(ROOT),
    )
    base.update(kw)
    return ReadSet(**base)


def padd(path: str, p: str | None) -> AddFile:
    return AddFile(path, {"p": p}, 1, 1, stats='{"numRecords":1,"minValues":{"id":100},"maxValues":{"id":100}}')


def winner(*actions, info: dict | None = None) -> WinningCommit:
    return WinningCommit.from_actions(4, [CommitInfo(info or {"operation": "WRITE"}), *actions])


def test_winning_commit_summary():
    w = winner(Protocol(1, 2), Metadata("m", "{}"), padd("a", "x"), RemoveFile("b"), Txn("app", 1), DomainMetadata("d", ""))
    assert (w.protocol, w.metadata.id, [a.path for a in w.adds], [r.path for r in w.removes]) == (Protocol(1, 2), "m", ["a"], ["b"])
    assert w.txn_app_ids == {"app"} and w.domains == {"d"} and w.operation == "WRITE"
    assert winner(padd("a", "x"), info={"operation": "MERGE", "isBlindAppend": True}).is_blind_append
    assert winner(padd("a", "x")).is_blind_append  # a plain WRITE that only adds (delta-rs leaves the flag out)
    assert not winner(padd("a", "x"), info={"operation": "MERGE"}).is_blind_append  # one that read: not
    assert not winner(padd("a", "x"), info={"operation": "WRITE", "isBlindAppend": False}).is_blind_append


def test_nothing_overlapping_is_no_conflict():
    current = read_set(read_predicates=[Predicate.parse("p = 'a'")], read_paths={"p=a/1"}, removed_paths={"p=a/1"})
    check_conflicts(current, winner(padd("p=b/2", "b"), RemoveFile("p=b/3")))


def test_blind_appends_never_conflict_with_each_other():
    check_conflicts(read_set(is_blind_append=True), winner(padd("p=a/2", "a")))


def test_add_into_a_read_partition_is_a_concurrent_append():
    current = read_set(read_predicates=[Predicate.parse("p = 'a'")])
    with pytest.raises(ConcurrentAppendError, match="p=a") as err:
        check_conflicts(current, winner(padd("p=a/new", "a")))
    assert err.value.winning_version == 4
    # An add into another partition does not conflict, whatever its stats say.
    check_conflicts(current, winner(padd("p=b/new", "b")))


def test_partition_match_ignores_data_stats():
    # The read predicate names a data column too; stats of the winner's add say
    # id=100, but only partition values may decide (delta-spark).
    current = read_set(read_predicates=[Predicate.parse("p = 'a' AND id = 1")])
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(current, winner(padd("p=a/new", "a")))


def test_null_partition_read():
    current = read_set(read_predicates=[Predicate.parse("p IS NULL")])
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(current, winner(padd("p=__HIVE_DEFAULT_PARTITION__/x", None)))
    check_conflicts(current, winner(padd("p=a/x", "a")))


def test_whole_table_read_conflicts_with_any_add():
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(read_set(read_whole_table=True), winner(padd("p=z/x", "z")))


def test_unpartitioned_table_predicate_read_conflicts_with_any_add():
    current = read_set(partition_columns=[], read_predicates=[Predicate.parse("id = 1")])
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(current, winner(AddFile("x", {}, 1, 1)))
    # Reading files only (no predicate) does not make adds conflict.
    check_conflicts(read_set(partition_columns=[], read_paths={"y"}), winner(AddFile("x", {}, 1, 1)))


def test_write_serializable_lets_blind_appends_through_but_not_other_adds():
    """delta-spark's WriteSerializable: a blind append does not conflict with
    a reader (unless the reader changes the metadata); an add by a commit
    that read the table (an inserting MERGE) does."""
    current = read_set(isolation_level="WriteSerializable", read_whole_table=True)
    blind = winner(padd("p=a/x", "a"), info={"operation": "WRITE", "isBlindAppend": True})
    check_conflicts(current, blind)
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(read_set(isolation_level="WriteSerializable", read_whole_table=True, changes_metadata=True), blind)
    merge = winner(padd("p=a/x", "a"), info={"operation": "MERGE", "isBlindAppend": False})
    assert not merge.is_blind_append  # its commitInfo says so, though it only adds
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(current, merge)


def test_snapshot_isolation_ignores_concurrent_adds():
    check_conflicts(read_set(isolation_level="SnapshotIsolation", read_whole_table=True), winner(padd("p=a/x", "a")))


def test_removing_a_file_we_read_is_a_delete_read():
    with pytest.raises(ConcurrentDeleteReadError, match="p=a/1"):
        check_conflicts(read_set(read_paths={"p=a/1"}), winner(RemoveFile("p=a/1")))


def test_paths_are_compared_canonically():
    with pytest.raises(ConcurrentDeleteReadError):
        check_conflicts(read_set(read_paths={"p=a b/1"}), winner(RemoveFile("file:///data/t/p=a%20b/1")))


def test_any_remove_conflicts_with_a_whole_table_read():
    with pytest.raises(ConcurrentDeleteReadError):
        check_conflicts(read_set(read_whole_table=True, isolation_level="SnapshotIsolation"), winner(RemoveFile("zzz")))


def test_removing_a_file_we_remove_is_a_delete_delete():
    current = read_set(read_paths={"p=a/1"}, removed_paths={"p=a/1"})
    with pytest.raises(ConcurrentDeleteDeleteError, match="p=a/1"):
        check_conflicts(current, winner(RemoveFile("p=a/1")))


def test_concurrent_metadata_change_aborts():
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(is_blind_append=True), winner(Metadata("m", "{}")))


def test_concurrent_create_is_a_protocol_change():
    with pytest.raises(ProtocolChangedError, match="created concurrently"):
        check_conflicts(read_set(read_version=None), winner(Protocol(1, 2), Metadata("m", "{}")))


def test_protocol_upgrade_to_an_unsupported_writer_feature_aborts():
    with pytest.raises(ProtocolChangedError, match="someFutureFeature"):  # every legacy feature is implemented now
        check_conflicts(read_set(is_blind_append=True), winner(Protocol(1, 7, None, ("someFutureFeature",))))


def test_both_changing_the_protocol_aborts():
    with pytest.raises(ProtocolChangedError):
        check_conflicts(read_set(changes_protocol=True), winner(Protocol(1, 2)))
    check_conflicts(read_set(), winner(Protocol(1, 2)))


def test_same_txn_app_id_is_a_concurrent_transaction():
    with pytest.raises(ConcurrentTransactionError, match="app-1"):
        check_conflicts(read_set(is_blind_append=True, read_app_ids={"app-1"}), winner(padd("x", "a"), Txn("app-1", 2)))
    check_conflicts(read_set(is_blind_append=True, read_app_ids={"app-1"}), winner(padd("x", "a"), Txn("app-2", 2)))


def test_same_domain_is_a_concurrent_transaction():
    with pytest.raises(ConcurrentTransactionError, match="d1"):
        check_conflicts(read_set(domains={"d1"}), winner(DomainMetadata("d1", "")))


def test_every_conflict_is_a_concurrent_modification():
    for cls in (ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentDeleteDeleteError,
                MetadataChangedError, ProtocolChangedError, ConcurrentTransactionError):
        assert issubclass(cls, ConcurrentModificationError)


def test_an_identity_high_water_mark_only_winner_is_tolerated_by_a_transaction_changing_no_metadata():
    """delta-spark's checkNoMetadataUpdates: a winner tagged delta.identity.schemaUpdate
    (its metadata only moved identity high-water marks) does not abort a
    transaction that changes no metadata; one that changes metadata still conflicts."""
    tagged = {"operation": "WRITE", "isBlindAppend": False, "tags": {"delta.identity.schemaUpdate": "true"}}
    w = winner(Metadata("m", "{}"), padd("a", "x"), info=tagged)
    assert w.identity_only_metadata_update
    check_conflicts(read_set(read_predicates=[Predicate.parse("p = 'y'")], removed_paths={"/t/b"}), w)
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(changes_metadata=True, is_blind_append=True), w)
    untagged = winner(Metadata("m", "{}"), info={"operation": "WRITE"})
    assert not untagged.identity_only_metadata_update
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(), untagged)


READ_MD = Metadata("m", '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}',
                   configuration={"k": "v"}, created_time=1)
V1_PROTOCOL = Protocol(1, 2)
DV_PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "invariants", "deletionVectors"))


def _changed(**configuration) -> Metadata:
    return Metadata(READ_MD.id, READ_MD.schema_string, configuration={**READ_MD.configuration, **configuration},
                    created_time=1)


def test_a_winner_only_turning_on_deletion_vectors_is_tolerated_as_in_delta_spark():
    """delta-spark 4's attemptToResolveMetadataConflicts: a transaction that
    changes no metadata commits over a winner that only set
    delta.enableDeletionVectors=true on a protocol supporting them (a writer
    may always choose not to write vectors). We used to raise
    MetadataChangedError here, where delta-spark does not."""
    enable = winner(DV_PROTOCOL, _changed(**{"delta.enableDeletionVectors": "true"}), info={"operation": "SET TBLPROPERTIES"})
    current = read_set(read_predicates=[Predicate.parse("p = 'a'")], metadata=READ_MD, protocol=V1_PROTOCOL)
    check_conflicts(current, enable)
    assert current.metadata == enable.metadata and current.protocol == DV_PROTOCOL  # later winners compare with these
    # Not when we change metadata too, nor for any other change.
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(changes_metadata=True, metadata=READ_MD, protocol=V1_PROTOCOL), enable)
    for other in (
        winner(DV_PROTOCOL, _changed(**{"delta.enableDeletionVectors": "false"})),
        winner(_changed(**{"delta.enableDeletionVectors": "true"})),  # the protocol lacks the feature
        winner(_changed(**{"concurrency.test": "x"})),  # a property off delta-spark's list
        winner(Metadata(READ_MD.id, READ_MD.schema_string, configuration={}, created_time=1)),  # a removed one
        winner(Metadata(READ_MD.id, READ_MD.schema_string.replace('"id"', '"key"'), configuration=READ_MD.configuration,
                        created_time=1)),
    ):
        with pytest.raises(MetadataChangedError):
            check_conflicts(read_set(metadata=READ_MD, protocol=V1_PROTOCOL), other)


def test_a_winner_only_turning_on_column_mapping_by_name_is_tolerated_as_in_delta_spark():
    mapped = READ_MD.schema_string.replace(
        '"metadata":{}', '"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"id"}'
    )
    protocol = Protocol(2, 5)
    name = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}
    enable = winner(protocol, Metadata(READ_MD.id, mapped, configuration={**READ_MD.configuration, **name},
                                       created_time=1))
    check_conflicts(read_set(metadata=READ_MD, protocol=V1_PROTOCOL), enable)
    by_id = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "1"}
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(metadata=READ_MD, protocol=V1_PROTOCOL),
                        winner(protocol, Metadata(READ_MD.id, mapped, configuration={**READ_MD.configuration, **by_id},
                                                  created_time=1)))
    renamed = mapped.replace('"name":"id"', '"name":"key"')
    with pytest.raises(MetadataChangedError):
        check_conflicts(read_set(metadata=READ_MD, protocol=V1_PROTOCOL),
                        winner(protocol, Metadata(READ_MD.id, renamed, configuration={**READ_MD.configuration, **name},
                                                  created_time=1)))
