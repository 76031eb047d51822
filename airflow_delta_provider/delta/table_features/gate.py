"""Protocol gates: what this implementation can read and write.

PROTOCOL.md "Table Features": a reader must refuse a table whose reader
version or reader features it does not implement, and a writer must refuse
unknown or unimplemented writer features. Both checks run before any data file
is read or written, and their errors name what is missing.

Every writer feature of legacy writer versions 3 to 6 is implemented: CHECK
constraints (3), the change data feed and generated columns (4,
:mod:`.generated_columns`), column mapping (5) and identity columns (6,
:mod:`.identity`).
"""

from __future__ import annotations

from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.errors import UnsupportedFeatureError

#: The ``variant`` type's feature, and the name delta-spark 3.2 to 4.0 gave it
#: while in preview; a table listing either may hold variant columns.
VARIANT_FEATURE, VARIANT_PREVIEW_FEATURE = "variantType", "variantType-preview"
VARIANT_FEATURES = frozenset({VARIANT_FEATURE, VARIANT_PREVIEW_FEATURE})
#: Type widening, under its name and delta-spark 3.2's preview name.
TYPE_WIDENING_FEATURE, TYPE_WIDENING_PREVIEW_FEATURE = "typeWidening", "typeWidening-preview"
TYPE_WIDENING_FEATURES = frozenset({TYPE_WIDENING_FEATURE, TYPE_WIDENING_PREVIEW_FEATURE})

#: Reader features we implement fully. ``vacuumProtocolCheck`` asks nothing of
#: a reader; it makes VACUUM run the writer check, which it always does.
#: ``deletionVectors``: the core decodes every vector
#: (:mod:`airflow_delta_provider.delta.actions.deletion_vectors`).
#: ``columnMapping``: scans and writes translate names (:mod:`.column_mapping`).
#: ``timestampNtz``: the ``timestamp_ntz`` type is read, written, partitioned
#: by and skipped on like ``timestamp``, without a time zone.
#: ``v2Checkpoint``: UUID-named checkpoints and their sidecars are read
#: (:mod:`.checkpoint_reader`) and written (:mod:`.checkpoint_v2`).
#: ``variantType`` (and its preview name): ``variant`` columns are read and
#: written unshredded (a struct of binary ``value`` and ``metadata``), with
#: no statistics.
#: ``typeWidening`` (and its preview name): files written before a column
#: widened are read as the table's type (:mod:`.type_widening`).
SUPPORTED_READER_FEATURES = frozenset(
    {"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"}
    | VARIANT_FEATURES
    | TYPE_WIDENING_FEATURES
)

#: Writer features we implement: those of writer version 2, deletion vectors
#: (every scan applies them, every remove carries them, DELETE and UPDATE
#: write them when ``delta.enableDeletionVectors`` is true), column mapping
#: ``timestampNtz``, ``v2Checkpoint``, ``variantType`` and ``typeWidening``
#: (``mergeSchema`` widens types and records ``delta.typeChanges``), and
#: ``checkpointProtection`` (log cleanup and checkpoints keep out of the
#: protected history: :mod:`.log_cleanup`, :mod:`.checkpoint`), and
#: ``inCommitTimestamp`` (every commit carries a monotonic one: :mod:`.transaction`),
#: ``checkConstraints`` (every write job checks ``delta.constraints.*``:
#: :mod:`.constraints`), ``domainMetadata`` (replay and checkpoints keep every
#: domain; we change none but row tracking's, whose concurrent changes are
#: reconciled, so none of our commits conflicts over one) and
#: ``clustering`` (liquid clustering: its ``delta.clustering`` domain is kept,
#: its columns cannot be dropped, and Z-order is refused, as in delta-spark),
#: ``changeDataFeed`` (UPDATE, DELETE and MERGE write their changed rows
#: as ``cdc`` files: :mod:`airflow_delta_provider.spark.write.change_data`),
#: ``rowTracking`` (every commit gives new files fresh row ids above the
#: ``delta.rowTracking`` high-water mark and its version as their default row
#: commit version, reassigned on a retry: :mod:`.row_tracking`; with
#: ``delta.enableRowTracking`` rewrites keep rows' stable ids and versions in
#: the materialized columns: :mod:`airflow_delta_provider.spark.read.row_tracking`),
#: ``generatedColumns`` (every write job computes a generated column where the
#: data lacks it and checks ``column <=> expression`` on every row; UPDATE and
#: MERGE recompute it; partition pruning follows a partition column generated
#: from a data column: :mod:`.generated_columns`) and ``identityColumns``
#: (APPEND and MERGE inserts generate values beyond the high-water mark and
#: commit the new mark; GENERATED ALWAYS refuses given values; an identity
#: column is never updated: :mod:`.identity`).
SUPPORTED_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "changeDataFeed",
        "checkConstraints",
        "checkpointProtection",
        "clustering",
        "columnMapping",
        "deletionVectors",
        "domainMetadata",
        "generatedColumns",
        "identityColumns",
        "inCommitTimestamp",
        "invariants",
        "rowTracking",
        "timestampNtz",
        "v2Checkpoint",
    }
    | VARIANT_FEATURES
    | TYPE_WIDENING_FEATURES
)

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
        used.add("checkConstraints")
    if configuration.get("delta.enableChangeDataFeed", "false").strip().lower() == "true":
        used.add("changeDataFeed")
    for key in _field_metadata_keys(metadata.schema_json):
        if key == "delta.generationExpression":
            used.add("generatedColumns")
        elif key.startswith("delta.identity."):
            used.add("identityColumns")
    return used


def _field_metadata_keys(schema: dict) -> set[str]:
    from airflow_delta_provider.delta.schema.types import walk_fields

    return {key for _, f in walk_fields(schema) for key in (f.get("metadata") or {})}


#: Writer features whose use shows in the metadata, so that an unused one
#: does not stop a write (see :func:`_active_features`).
_VISIBLE_WRITER_FEATURES = frozenset({"checkConstraints", "changeDataFeed", "generatedColumns", "identityColumns"})


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
            raise UnsupportedFeatureError(f"table requires unsupported reader feature(s): {', '.join(missing)}")
    if metadata is not None:
        from airflow_delta_provider.delta.table_features import column_mapping

        column_mapping.mode_of(metadata.configuration)  # an unknown mode is refused
        if TYPE_WIDENING_FEATURES & set(protocol.reader_features or ()):
            from airflow_delta_provider.delta.table_features import type_widening

            type_widening.check_readable(metadata.schema_json)


def unsupported_writer_features(protocol: Protocol, metadata: Metadata | None = None) -> list[str]:
    """Names of the writer features (or versions) that stop us writing.

    A feature we do not implement stops a write unless ``metadata`` shows
    that the table does not use it (:func:`_active_features`)."""
    wv = protocol.min_writer_version
    if wv > MAX_WRITER_VERSION or wv < 1:
        return [f"writer version {wv}"]
    used = _active_features(metadata)

    def blocking(name: str) -> bool:
        if name in SUPPORTED_WRITER_FEATURES:
            return False
        return used is None or name not in _VISIBLE_WRITER_FEATURES or name in used

    if wv in _LEGACY_WRITER_FEATURES:
        return [f"{name} (writer version {wv})" for name in _LEGACY_WRITER_FEATURES[wv] if blocking(name)]
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
    from airflow_delta_provider.delta.table_features import column_mapping
    from airflow_delta_provider.delta import table_properties
    from airflow_delta_provider.delta.schema.types import VARIANT, uses_type

    if metadata is None:
        return set()
    needed: set[str] = set()
    if table_properties.deletion_vectors_enabled(metadata):
        needed.add("deletionVectors")
    if column_mapping.mode_of(metadata.configuration) != column_mapping.NONE:
        needed.add("columnMapping")
    if uses_type(metadata.schema_json, "timestamp_ntz"):
        needed.add("timestampNtz")
    if uses_type(metadata.schema_json, VARIANT) and not _lists_in_both(protocol, VARIANT_PREVIEW_FEATURE):
        needed.add(VARIANT_FEATURE)
    if table_properties.checkpoint_policy(metadata) == table_properties.CHECKPOINT_POLICY_V2:
        needed.add("v2Checkpoint")
    if _uses_type_widening(metadata) and not _lists_in_both(protocol, TYPE_WIDENING_PREVIEW_FEATURE):
        needed.add(TYPE_WIDENING_FEATURE)
    return needed


def required_writer_features(metadata: Metadata | None) -> set[str]:
    """The writer-only features the table properties of ``metadata`` switch on."""
    from airflow_delta_provider.delta import table_properties
    from airflow_delta_provider.delta.table_features.check_constraints import table_constraints

    needed = set()
    if metadata is not None and table_properties.in_commit_timestamps_enabled(metadata):
        needed.add("inCommitTimestamp")
    if metadata is not None and table_constraints(metadata):
        needed.add("checkConstraints")
    if metadata is not None and table_properties.row_tracking_enabled(metadata):
        needed.update(("rowTracking", "domainMetadata"))  # the high-water mark is a domain
    if metadata is not None and table_properties.change_data_feed_enabled(metadata):
        needed.add("changeDataFeed")
    if metadata is not None:  # columns that use them (delta-spark's ``actionUsesFeature``)
        needed |= _active_features(metadata) & {"generatedColumns", "identityColumns"}  # type: ignore[operator]
    return needed


def _uses_type_widening(metadata: Metadata) -> bool:
    """``delta.enableTypeWidening`` is on, or the schema records type changes
    (delta-spark's ``actionUsesFeature``): old files may hold narrower types."""
    from airflow_delta_provider.delta import table_properties
    from airflow_delta_provider.delta.table_features import type_widening

    return table_properties.type_widening_enabled(metadata) or bool(type_widening.all_changes(metadata.schema_json))


def _lists_in_both(protocol: Protocol | None, feature: str) -> bool:
    """Whether ``protocol`` lists ``feature`` as a reader and a writer feature
    (a preview feature delta-spark keeps instead of adding the stable one)."""
    if protocol is None:
        return False
    readers, writers = listed_features(protocol)
    return feature in readers and feature in writers


def listed_features(protocol: Protocol) -> tuple[set[str], set[str]]:
    """The reader and writer features ``protocol`` lists, or implies by its
    legacy versions (reader 2: column mapping; writer 2 to 6: PROTOCOL.md's
    table)."""
    if protocol.min_reader_version >= 3:
        readers = set(protocol.reader_features or ())
    else:
        readers = {"columnMapping"} if protocol.min_reader_version == 2 else set()
    if protocol.min_writer_version >= 7:
        writers = set(protocol.writer_features or ())
    else:
        writers = set(_LEGACY_WRITER_2_FEATURES) if protocol.min_writer_version >= 2 else set()
        writers.update(_LEGACY_WRITER_FEATURES.get(protocol.min_writer_version, ()))
    return readers, writers


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
    readers, writers = listed_features(protocol)
    if needed <= readers and needed <= writers and writer_only <= writers:
        return protocol
    rv, wv = protocol.min_reader_version, protocol.min_writer_version
    if writer_only <= writers and needed - readers <= {"columnMapping"} and rv < 3 and wv < 7:
        return Protocol(min_reader_version=max(rv, 2), min_writer_version=max(wv, 5))
    if not needed and writer_only - writers <= {"checkConstraints", "changeDataFeed"} and wv < 7:
        legacy = 4 if "changeDataFeed" in writer_only else 3  # delta-spark's ADD CONSTRAINT, enableChangeDataFeed
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
    (r1, w1), (r2, w2) = listed_features(first), listed_features(second)
    return Protocol(
        min_reader_version=reader,
        min_writer_version=writer,
        reader_features=tuple(sorted(r1 | r2)) if reader >= 3 else None,
        writer_features=tuple(sorted(w1 | w2 | r1 | r2)) if writer >= 7 else None,
    )


def lists_writer_feature(protocol: Protocol, feature: str) -> bool:
    """Whether ``protocol`` lists writer feature ``feature`` (a table-features protocol)."""
    return feature in (protocol.writer_features or ())


def in_commit_timestamps_since(protocol: Protocol, metadata: Metadata) -> int | None:
    """The first version whose commit carries an in-commit timestamp, or
    None when they are off: on needs the table property and the protocol
    listing ``inCommitTimestamp`` (PROTOCOL.md)."""
    from airflow_delta_provider.delta import table_properties

    if not lists_writer_feature(protocol, "inCommitTimestamp"):
        return None
    return table_properties.in_commit_timestamps_since(metadata)


def protects_checkpoints(protocol: Protocol) -> bool:
    """Whether ``protocol`` lists ``checkpointProtection``."""
    return lists_writer_feature(protocol, "checkpointProtection")


def check_writable(protocol: Protocol, metadata: Metadata | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless we can write the table."""
    check_readable(protocol, metadata)
    missing = unsupported_writer_features(protocol, metadata)
    if missing:
        raise UnsupportedFeatureError(
            f"table requires unsupported writer feature(s): {', '.join(missing)}; "
            f"airflow-delta-provider writes {', '.join(sorted(SUPPORTED_WRITER_FEATURES))} only"
        )
