"""The gate: whether this implementation can read and write a table, and
the protocol a table needs for its properties and schema.

PROTOCOL.md "Table Features": a reader must refuse a table whose reader
version or reader features it does not implement, and a writer must refuse
unknown or unimplemented writer features. Both checks run before any data file
is read or written, and their errors name what is missing. Which features
exist and which we implement is :mod:`.features`; what each feature asks of
a table is its own module beside this one.

Every writer feature of legacy writer versions 3 to 6 is implemented: CHECK
constraints (3), the change data feed and generated columns (4,
:mod:`.generated_columns`), column mapping (5) and identity columns (6,
:mod:`.identity_columns`).
"""

from __future__ import annotations

from typing import Any

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import UnsupportedFeatureError
from airflow_delta_provider.delta.schema.fields import uses_type, walk_fields
from airflow_delta_provider.delta.table_features import (
    change_data_feed,
    column_mapping,
    deletion_vectors,
    features,
    in_commit_timestamps,
    row_tracking,
    type_widening,
    v2_checkpoint,
    variant,
)
from airflow_delta_provider.delta.table_features.check_constraints import table_constraints


def _active_features(metadata: Metadata | None) -> set[str] | None:
    """The writer features ``metadata`` actually uses (None: unknown, so
    every listed feature counts as used). A legacy writer version, or a
    feature list that delta-spark's upgrade filled with everything an old
    version implied, may name features a table does not use: a writer that
    lacks one only has to refuse when the table uses it."""
    if metadata is None:
        return None
    used: set[str] = set()
    configuration = metadata.configuration
    if any(k.startswith("delta.constraints.") for k in configuration):
        used.add(features.CHECK_CONSTRAINTS)
    if configuration.get("delta.enableChangeDataFeed", "false").strip().lower() == "true":
        used.add(features.CHANGE_DATA_FEED)
    for key in _field_metadata_keys(metadata.schema_json):
        if key == "delta.generationExpression":
            used.add(features.GENERATED_COLUMNS)
        elif key.startswith("delta.identity."):
            used.add(features.IDENTITY_COLUMNS)
    return used


def _field_metadata_keys(schema: dict[str, Any]) -> set[str]:
    return {key for _, f in walk_fields(schema) for key in (f.get("metadata") or {})}


#: Writer features whose use shows in the metadata, so that an unused one
#: does not stop a write (see :func:`_active_features`).
_VISIBLE_WRITER_FEATURES = frozenset(
    {features.CHECK_CONSTRAINTS, features.CHANGE_DATA_FEED, features.GENERATED_COLUMNS, features.IDENTITY_COLUMNS}
)


def check_readable(protocol: Protocol, metadata: Metadata | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless we can read the table."""
    rv = protocol.min_reader_version
    if rv > features.MAX_READER_VERSION or rv < 1:
        raise UnsupportedFeatureError(
            f"table requires reader version {rv}; airflow-delta-provider reads versions 1 to "
            f"{features.MAX_READER_VERSION} (reader features: {', '.join(sorted(features.SUPPORTED_READER_FEATURES))})"
        )
    if rv == 3:
        missing = sorted(set(protocol.reader_features or ()) - features.SUPPORTED_READER_FEATURES)
        if missing:
            raise UnsupportedFeatureError(f"table requires unsupported reader feature(s): {', '.join(missing)}")
    if metadata is not None:
        column_mapping.mode_of(metadata.configuration)  # an unknown mode is refused
        if features.TYPE_WIDENING_FEATURES & set(protocol.reader_features or ()):
            type_widening.check_readable(metadata.schema_json)


def unsupported_writer_features(protocol: Protocol, metadata: Metadata | None = None) -> list[str]:
    """Names of the writer features (or versions) that stop us writing.

    A feature we do not implement stops a write unless ``metadata`` shows
    that the table does not use it (:func:`_active_features`)."""
    wv = protocol.min_writer_version
    if wv > features.MAX_WRITER_VERSION or wv < 1:
        return [f"writer version {wv}"]
    used = _active_features(metadata)

    def blocking(name: str) -> bool:
        if name in features.SUPPORTED_WRITER_FEATURES:
            return False
        return used is None or name not in _VISIBLE_WRITER_FEATURES or name in used

    if wv in features.LEGACY_WRITER_FEATURES:
        return [f"{name} (writer version {wv})" for name in features.LEGACY_WRITER_FEATURES[wv] if blocking(name)]
    if wv == 7:
        return sorted(name for name in set(protocol.writer_features or ()) if blocking(name))
    return []


def required_features(metadata: Metadata | None, protocol: Protocol | None = None) -> set[str]:
    """The reader-and-writer features the table properties of ``metadata``
    switch on, and those its schema's types need (``timestampNtz`` for a
    ``timestamp_ntz`` column at any depth, as delta-spark infers it;
    ``variantType`` for a ``variant`` one, unless ``protocol`` already lists
    ``variantType-preview``, which delta-spark keeps as it is; ``typeWidening``
    likewise, when ``delta.enableTypeWidening`` is on or types were widened)."""
    if metadata is None:
        return set()
    needed: set[str] = set()
    if deletion_vectors.is_required(metadata):
        needed.add(features.DELETION_VECTORS)
    if column_mapping.mode_of(metadata.configuration) != column_mapping.NONE:
        needed.add(features.COLUMN_MAPPING)
    if uses_type(metadata.schema_json, "timestamp_ntz"):
        needed.add(features.TIMESTAMP_NTZ)
    if variant.is_used(metadata) and not _lists_in_both(protocol, features.VARIANT_PREVIEW_FEATURE):
        needed.add(features.VARIANT_FEATURE)
    if v2_checkpoint.is_required(metadata):
        needed.add(features.V2_CHECKPOINT)
    if type_widening.is_used(metadata) and not _lists_in_both(protocol, features.TYPE_WIDENING_PREVIEW_FEATURE):
        needed.add(features.TYPE_WIDENING_FEATURE)
    return needed


def required_writer_features(metadata: Metadata | None) -> set[str]:
    """The writer-only features the table properties of ``metadata`` switch on."""
    needed = set()
    if metadata is not None and in_commit_timestamps.is_required(metadata):
        needed.add(features.IN_COMMIT_TIMESTAMP)
    if metadata is not None and table_constraints(metadata):
        needed.add(features.CHECK_CONSTRAINTS)
    if metadata is not None and row_tracking.is_required(metadata):
        needed.update((features.ROW_TRACKING, features.DOMAIN_METADATA))  # the high-water mark is a domain
    if metadata is not None and change_data_feed.is_required(metadata):
        needed.add(features.CHANGE_DATA_FEED)
    if metadata is not None:  # columns that use them (delta-spark's ``actionUsesFeature``)
        needed |= (_active_features(metadata) or set()) & {features.GENERATED_COLUMNS, features.IDENTITY_COLUMNS}
    return needed


def _lists_in_both(protocol: Protocol | None, feature: str) -> bool:
    """Whether ``protocol`` lists ``feature`` as a reader and a writer feature
    (a preview feature delta-spark keeps instead of adding the stable one)."""
    if protocol is None:
        return False
    readers, writers = features.listed_features(protocol)
    return feature in readers and feature in writers


def protocol_for(protocol: Protocol, metadata: Metadata | None) -> Protocol:
    """``protocol``, upgraded as the table properties of ``metadata`` need,
    the way delta-spark upgrades it.

    - Column mapping alone on a legacy protocol: reader 2 / writer 5.
    - CHECK constraints alone on a legacy protocol: writer 3; with the change
      data feed: writer 4.
    - Writer-only features alone (in-commit timestamps, row tracking): writer 7, the reader
      version kept, every feature the old writer version implied listed.
    - Anything else (deletion vectors, or column mapping on a table-features
      protocol): reader 3 / writer 7, with every feature the old versions
      implied listed explicitly, plus the new ones.
    """
    needed = required_features(metadata, protocol)
    writer_only = required_writer_features(metadata)
    readers, writers = features.listed_features(protocol)
    if needed <= readers and needed <= writers and writer_only <= writers:
        return protocol
    rv, wv = protocol.min_reader_version, protocol.min_writer_version
    if writer_only <= writers and needed - readers <= {features.COLUMN_MAPPING} and rv < 3 and wv < 7:
        return Protocol(min_reader_version=max(rv, 2), min_writer_version=max(wv, 5))
    if not needed and writer_only - writers <= {features.CHECK_CONSTRAINTS, features.CHANGE_DATA_FEED} and wv < 7:
        legacy = (
            4 if features.CHANGE_DATA_FEED in writer_only else 3
        )  # delta-spark's ADD CONSTRAINT, enableChangeDataFeed
        return Protocol(min_reader_version=rv, min_writer_version=max(wv, legacy))
    if needed <= readers and rv < 3:
        return Protocol(
            min_reader_version=rv, min_writer_version=7, writer_features=tuple(sorted(writers | needed | writer_only))
        )
    return Protocol(
        min_reader_version=3,
        min_writer_version=7,
        reader_features=tuple(sorted(readers | needed)),
        writer_features=tuple(sorted(writers | needed | writer_only)),
    )


def merge_protocols(first: Protocol, second: Protocol) -> Protocol:
    """The smallest protocol both ``first`` and ``second`` fit in (delta-spark's
    ``Protocol.merge``): for an older state coming back (RESTORE), where no
    feature either one lists may be lost."""
    reader = max(first.min_reader_version, second.min_reader_version)
    writer = max(first.min_writer_version, second.min_writer_version)
    if reader < 3 and writer < 7:
        return Protocol(min_reader_version=reader, min_writer_version=writer)
    (r1, w1), (r2, w2) = features.listed_features(first), features.listed_features(second)
    return Protocol(
        min_reader_version=reader,
        min_writer_version=writer,
        reader_features=tuple(sorted(r1 | r2)) if reader >= 3 else None,
        writer_features=tuple(sorted(w1 | w2 | r1 | r2)) if writer >= 7 else None,
    )


def check_writable(protocol: Protocol, metadata: Metadata | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless we can write the table."""
    check_readable(protocol, metadata)
    missing = unsupported_writer_features(protocol, metadata)
    if missing:
        raise UnsupportedFeatureError(
            f"table requires unsupported writer feature(s): {', '.join(missing)}; "
            f"airflow-delta-provider writes {', '.join(sorted(features.SUPPORTED_WRITER_FEATURES))} only"
        )
