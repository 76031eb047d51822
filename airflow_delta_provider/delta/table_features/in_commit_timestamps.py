"""The ``inCommitTimestamp`` table feature (PROTOCOL.md "In-Commit Timestamps").

With ``delta.enableInCommitTimestamps`` on and the feature listed,
``commitInfo`` is a commit's first action and carries ``inCommitTimestamp``:
the writer's clock, but always after the previous commit's, so the
timestamps grow strictly with the versions whatever the clocks of concurrent
writers say. Readers date such commits by it, not by their file's time,
which a copy or a store may change. The commit that turns them on records
its version and timestamp in the table properties.
"""

from __future__ import annotations

from dataclasses import replace

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import CommitInfo, Metadata, Protocol, parse_commit
from airflow_delta_provider.delta.log.store import LogFile, LogStore
from airflow_delta_provider.delta.table_features.features import IN_COMMIT_TIMESTAMP, lists_writer_feature

#: The table properties the enabling commit records, and only writers decide.
ENABLEMENT_KEYS = (table_properties.ICT_ENABLEMENT_VERSION, table_properties.ICT_ENABLEMENT_TIMESTAMP)


def enabled_since(protocol: Protocol, metadata: Metadata) -> int | None:
    """The first version whose commit carries an in-commit timestamp, or
    None when they are off: on needs the table property and the protocol
    listing ``inCommitTimestamp`` (PROTOCOL.md)."""
    if not lists_writer_feature(protocol, IN_COMMIT_TIMESTAMP):
        return None
    return table_properties.in_commit_timestamps_since(metadata)


def read(store: LogStore, commit: LogFile) -> int | None:
    """The ``inCommitTimestamp`` of ``commit``, or None when it has none.
    Only its first line is parsed: a commit that has one puts
    ``commitInfo`` first (PROTOCOL.md)."""
    try:
        first = store.read(commit.name).split(b"\n", 1)[0]
    except FileNotFoundError:
        return None
    return carried_by(next((a for a in parse_commit(first) if isinstance(a, CommitInfo)), None))


def carried_by(info: CommitInfo | None) -> int | None:
    """The ``inCommitTimestamp`` a ``commitInfo`` carries, or None."""
    value = info.raw.get("inCommitTimestamp") if info is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def next_timestamp(store: LogStore, version: int, now_ms: int) -> int:
    """The ``inCommitTimestamp`` of a commit at ``version`` made at ``now_ms``:
    ``now_ms``, or 1 ms after the previous commit's time if that is later
    (its in-commit timestamp, or the file's time for a commit made before
    they were on)."""
    if version == 0:
        return now_ms
    previous = next((f for f in store.list_from(version - 1) if f.kind == "commit"), None)
    if previous is None or previous.version != version - 1:
        return now_ms
    last = read(store, previous)
    return max(now_ms, (previous.mtime_ms if last is None else last) + 1)


def record_enablement(metadata: Metadata, previous: Metadata | None, version: int, ict: int | None) -> Metadata:
    """``metadata`` as committed at ``version`` with in-commit timestamp
    ``ict`` (None: off): the commit that turns them on records its version
    and timestamp, later ones keep those, and one that turns them off drops
    them. Staged values are never kept (a RESTORE stages an old version's)."""
    was_on = previous is not None and table_properties.in_commit_timestamps_enabled(previous)
    configuration = dict(metadata.configuration)
    for key in ENABLEMENT_KEYS:
        configuration.pop(key, None)
    if ict is not None and previous is not None and not was_on:
        configuration[ENABLEMENT_KEYS[0]], configuration[ENABLEMENT_KEYS[1]] = str(version), str(ict)
    elif ict is not None and was_on:
        assert previous is not None
        configuration.update({k: previous.configuration[k] for k in ENABLEMENT_KEYS if k in previous.configuration})
    return metadata if configuration == dict(metadata.configuration) else replace(metadata, configuration=configuration)


def is_required(metadata: Metadata) -> bool:
    """Whether the table properties of ``metadata`` need the feature."""
    return table_properties.in_commit_timestamps_enabled(metadata)
