"""Every table feature by name, and the lists of those this implementation
reads and writes (PROTOCOL.md "Table Features").

This is the one place that names features, like delta-kernel-rs's
``table_features/mod.rs``: the modules beside it hold each feature's own
logic, and :mod:`.gate` decides from these lists whether a table can be read
or written. A feature moves into :data:`SUPPORTED_READER_FEATURES` or
:data:`SUPPORTED_WRITER_FEATURES` when it is implemented, and into
``docs/protocol-compliance.rst`` with the tests that show it.
"""

from __future__ import annotations

from airflow_delta_provider.delta.actions.model import Protocol

# --- Names -------------------------------------------------------------------------

APPEND_ONLY = "appendOnly"
INVARIANTS = "invariants"
CHECK_CONSTRAINTS = "checkConstraints"
CHANGE_DATA_FEED = "changeDataFeed"
GENERATED_COLUMNS = "generatedColumns"
COLUMN_MAPPING = "columnMapping"
IDENTITY_COLUMNS = "identityColumns"
DELETION_VECTORS = "deletionVectors"
ROW_TRACKING = "rowTracking"
DOMAIN_METADATA = "domainMetadata"
CLUSTERING = "clustering"
TIMESTAMP_NTZ = "timestampNtz"
V2_CHECKPOINT = "v2Checkpoint"
CHECKPOINT_PROTECTION = "checkpointProtection"
IN_COMMIT_TIMESTAMP = "inCommitTimestamp"
VACUUM_PROTOCOL_CHECK = "vacuumProtocolCheck"
#: The ``variant`` type's feature, and the name delta-spark 3.2 to 4.0 gave it
#: while in preview; a table listing either may hold variant columns.
VARIANT_FEATURE, VARIANT_PREVIEW_FEATURE = "variantType", "variantType-preview"
VARIANT_FEATURES = frozenset({VARIANT_FEATURE, VARIANT_PREVIEW_FEATURE})
#: Type widening, under its name and delta-spark 3.2's preview name.
TYPE_WIDENING_FEATURE, TYPE_WIDENING_PREVIEW_FEATURE = "typeWidening", "typeWidening-preview"
TYPE_WIDENING_FEATURES = frozenset({TYPE_WIDENING_FEATURE, TYPE_WIDENING_PREVIEW_FEATURE})

# --- What we implement ---------------------------------------------------------------

#: Reader features we implement fully. ``vacuumProtocolCheck`` asks nothing of
#: a reader; it makes VACUUM run the writer check, which it always does.
#: ``deletionVectors``: the core decodes every vector
#: (:mod:`airflow_delta_provider.delta.actions.deletion_vectors`).
#: ``columnMapping``: scans and writes translate names (:mod:`.column_mapping`).
#: ``timestampNtz``: the ``timestamp_ntz`` type is read, written, partitioned
#: by and skipped on like ``timestamp``, without a time zone.
#: ``v2Checkpoint``: UUID-named checkpoints and their sidecars are read
#: (:mod:`airflow_delta_provider.delta.log.checkpoint_reader`) and written
#: (:mod:`airflow_delta_provider.delta.checkpoint.v2`).
#: ``variantType`` (and its preview name): ``variant`` columns are read and
#: written unshredded (a struct of binary ``value`` and ``metadata``), with
#: no statistics (:mod:`.variant`).
#: ``typeWidening`` (and its preview name): files written before a column
#: widened are read as the table's type (:mod:`.type_widening`).
SUPPORTED_READER_FEATURES = frozenset(
    {COLUMN_MAPPING, DELETION_VECTORS, TIMESTAMP_NTZ, V2_CHECKPOINT, VACUUM_PROTOCOL_CHECK}
    | VARIANT_FEATURES
    | TYPE_WIDENING_FEATURES
)

#: Writer features we implement: those of writer version 2, deletion vectors
#: (every scan applies them, every remove carries them, DELETE and UPDATE
#: write them when ``delta.enableDeletionVectors`` is true: :mod:`.deletion_vectors`),
#: column mapping, ``timestampNtz``, ``v2Checkpoint``, ``variantType`` and
#: ``typeWidening`` (``mergeSchema`` widens types and records ``delta.typeChanges``),
#: ``checkpointProtection`` (log cleanup and checkpoints keep out of the
#: protected history: :mod:`.checkpoint_protection`), ``inCommitTimestamp``
#: (every commit carries a monotonic one: :mod:`.in_commit_timestamps`),
#: ``checkConstraints`` (every write job checks ``delta.constraints.*``:
#: :mod:`.check_constraints`), ``domainMetadata`` (replay and checkpoints keep every
#: domain; we change row tracking's, whose concurrent changes are reconciled,
#: and liquid clustering's, whose concurrent changes conflict) and
#: ``clustering`` (liquid clustering: APPEND and ALTER set the ``delta.clustering``
#: domain, OPTIMIZE clusters new files with partial ZCubes, its columns cannot be
#: dropped, and Z-order is refused, as in delta-spark: :mod:`.clustering`), ``changeDataFeed`` (UPDATE, DELETE and MERGE write their
#: changed rows as ``cdc`` files: :mod:`.change_data_feed`,
#: :mod:`airflow_delta_provider.spark.write.change_data`),
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
#: column is never updated: :mod:`.identity_columns`).
SUPPORTED_WRITER_FEATURES = frozenset(
    {
        APPEND_ONLY,
        CHANGE_DATA_FEED,
        CHECK_CONSTRAINTS,
        CHECKPOINT_PROTECTION,
        CLUSTERING,
        COLUMN_MAPPING,
        DELETION_VECTORS,
        DOMAIN_METADATA,
        GENERATED_COLUMNS,
        IDENTITY_COLUMNS,
        IN_COMMIT_TIMESTAMP,
        INVARIANTS,
        ROW_TRACKING,
        TIMESTAMP_NTZ,
        V2_CHECKPOINT,
    }
    | VARIANT_FEATURES
    | TYPE_WIDENING_FEATURES
)

# --- Legacy protocol versions ----------------------------------------------------------

#: Writer features that legacy writer version 2 implies, listed when a table
#: moves to writer version 7 (delta-spark's protocol upgrade does the same).
LEGACY_WRITER_2_FEATURES = (APPEND_ONLY, INVARIANTS)

#: What legacy writer versions 3 to 6 switch on (PROTOCOL.md "Writer Version Requirements").
LEGACY_WRITER_FEATURES = {
    3: (CHECK_CONSTRAINTS,),
    4: (CHECK_CONSTRAINTS, CHANGE_DATA_FEED, GENERATED_COLUMNS),
    5: (CHECK_CONSTRAINTS, CHANGE_DATA_FEED, GENERATED_COLUMNS, COLUMN_MAPPING),
    6: (CHECK_CONSTRAINTS, CHANGE_DATA_FEED, GENERATED_COLUMNS, COLUMN_MAPPING, IDENTITY_COLUMNS),
}

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


def listed_features(protocol: Protocol) -> tuple[set[str], set[str]]:
    """The reader and writer features ``protocol`` lists, or implies by its
    legacy versions (reader 2: column mapping; writer 2 to 6: PROTOCOL.md's
    table)."""
    if protocol.min_reader_version >= 3:
        readers = set(protocol.reader_features or ())
    else:
        readers = {COLUMN_MAPPING} if protocol.min_reader_version == 2 else set()
    if protocol.min_writer_version >= 7:
        writers = set(protocol.writer_features or ())
    else:
        writers = set(LEGACY_WRITER_2_FEATURES) if protocol.min_writer_version >= 2 else set()
        writers.update(LEGACY_WRITER_FEATURES.get(protocol.min_writer_version, ()))
    return readers, writers


def lists_writer_feature(protocol: Protocol, feature: str) -> bool:
    """Whether ``protocol`` lists writer feature ``feature`` (a table-features protocol)."""
    return feature in (protocol.writer_features or ())


def without_feature(protocol: Protocol, feature: str, *, adding: str | None = None) -> Protocol:
    """``protocol`` without ``feature`` (and with writer feature ``adding``),
    in its weakest form (delta-spark's ``Protocol.removeFeature``: list the
    features the versions imply, drop one, then normalize: a legacy protocol
    when the rest is exactly one, else writer 7 with reader 3 only if a reader
    feature is left)."""
    readers, writers = listed_features(protocol)
    readers.discard(feature)
    writers.discard(feature)
    if adding is not None:
        writers.add(adding)
    for writer_version in (1, 2, *LEGACY_WRITER_FEATURES):
        legacy = Protocol(2 if writer_version >= 5 else 1, writer_version)
        if listed_features(legacy) == (readers, writers):
            return legacy
    if readers:
        return Protocol(MAX_READER_VERSION, MAX_WRITER_VERSION, tuple(sorted(readers)), tuple(sorted(writers)))
    return Protocol(1, MAX_WRITER_VERSION, None, tuple(sorted(writers)))
