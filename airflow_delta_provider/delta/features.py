"""Protocol gates: what this implementation can read and write.

PROTOCOL.md "Table Features": a reader must refuse a table whose reader
version or reader features it does not implement, and a writer must refuse
unknown or unimplemented writer features. Both checks run before any data file
is read or written, and their errors name what is missing.
"""

from __future__ import annotations

from airflow_delta_provider.delta.actions import Metadata, Protocol
from airflow_delta_provider.delta.errors import UnsupportedFeatureError

#: Reader features we implement fully. ``vacuumProtocolCheck`` asks nothing of
#: a reader; it makes VACUUM run the writer check, which it always does.
#: ``deletionVectors``: the core decodes every vector
#: (:mod:`airflow_delta_provider.delta.deletion_vectors`).
SUPPORTED_READER_FEATURES = frozenset({"deletionVectors", "vacuumProtocolCheck"})

#: Writer features we implement: those of writer version 2, and deletion
#: vectors (every scan applies them, every remove carries them, DELETE and
#: UPDATE write them when ``delta.enableDeletionVectors`` is true).
SUPPORTED_WRITER_FEATURES = frozenset({"appendOnly", "deletionVectors", "invariants"})

#: Writer features that legacy writer version 2 implies, listed when a table
#: moves to writer version 7 (delta-spark's protocol upgrade does the same).
_LEGACY_WRITER_2_FEATURES = ("appendOnly", "invariants")

#: What legacy writer versions 3 to 6 switch on (PROTOCOL.md "Writer Version Requirements").
_LEGACY_WRITER_FEATURES = {
    3: ("checkConstraints",),
    4: ("checkConstraints", "changeDataFeed", "generatedColumns"),
    5: ("checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"),
    6: ("checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping", "identityColumns"),
}

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


def _column_mapping_mode(metadata: Metadata | None) -> str:
    if metadata is None:
        return "none"
    return metadata.configuration.get("delta.columnMapping.mode", "none").lower()


def check_readable(protocol: Protocol, metadata: Metadata | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless we can read the table."""
    rv = protocol.min_reader_version
    if rv > MAX_READER_VERSION or rv < 1:
        raise UnsupportedFeatureError(
            f"table requires reader version {rv}; airflow-delta-provider reads versions 1 to "
            f"{MAX_READER_VERSION} (reader features: {', '.join(sorted(SUPPORTED_READER_FEATURES))})"
        )
    if rv == 3:
        missing = sorted(set(protocol.reader_features or ()) - SUPPORTED_READER_FEATURES)
        if missing:
            raise UnsupportedFeatureError(
                f"table requires unsupported reader feature(s): {', '.join(missing)}"
            )
    if rv >= 2 and _column_mapping_mode(metadata) != "none":
        raise UnsupportedFeatureError(
            f"table requires unsupported reader feature(s): columnMapping "
            f"(delta.columnMapping.mode={_column_mapping_mode(metadata)})"
        )


def unsupported_writer_features(protocol: Protocol) -> list[str]:
    """Names of the writer features (or versions) that stop us writing."""
    wv = protocol.min_writer_version
    if wv > MAX_WRITER_VERSION or wv < 1:
        return [f"writer version {wv}"]
    if wv in _LEGACY_WRITER_FEATURES:
        return [f"{name} (writer version {wv})" for name in _LEGACY_WRITER_FEATURES[wv]]
    if wv == 7:
        missing = sorted(set(protocol.writer_features or ()) - SUPPORTED_WRITER_FEATURES)
        return missing
    return []


def protocol_for(protocol: Protocol, metadata: Metadata | None) -> Protocol:
    """``protocol``, upgraded as the table properties of ``metadata`` need.

    ``delta.enableDeletionVectors=true`` needs the ``deletionVectors`` reader
    and writer feature: a table below reader 3 / writer 7 moves there, its
    legacy writer features listed, as delta-spark upgrades it.
    """
    from airflow_delta_provider.delta import config

    if metadata is None or not config.deletion_vectors_enabled(metadata):
        return protocol
    readers = set(protocol.reader_features or ())
    writers = set(protocol.writer_features or ())
    if protocol.min_writer_version < 7:
        if protocol.min_writer_version >= 2:
            writers.update(_LEGACY_WRITER_2_FEATURES)
        writers.update(_LEGACY_WRITER_FEATURES.get(protocol.min_writer_version, ()))
    if protocol.min_reader_version == 2:
        readers.add("columnMapping")
    if "deletionVectors" in readers and "deletionVectors" in writers and protocol.min_writer_version == 7:
        return protocol
    readers.add("deletionVectors")
    writers.add("deletionVectors")
    return Protocol(
        min_reader_version=3,
        min_writer_version=7,
        reader_features=tuple(sorted(readers)),
        writer_features=tuple(sorted(writers)),
    )


def check_writable(protocol: Protocol, metadata: Metadata | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless we can write the table."""
    check_readable(protocol, metadata)
    missing = unsupported_writer_features(protocol)
    if missing:
        raise UnsupportedFeatureError(
            f"table requires unsupported writer feature(s): {', '.join(missing)}; "
            f"airflow-delta-provider writes {', '.join(sorted(SUPPORTED_WRITER_FEATURES))} only"
        )
