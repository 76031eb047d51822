"""Table properties (``metaData.configuration``) that the core acts on.

Defaults and interval syntax follow delta-spark's ``DeltaConfig.scala``:
durations are ``interval <n> <unit>`` strings (``interval 7 days``), and a
malformed value is an error rather than a silent default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError

CHECKPOINT_INTERVAL = "delta.checkpointInterval"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_RETENTION = "delta.logRetentionDuration"
ENABLE_EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
APPEND_ONLY = "delta.appendOnly"
ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
ENABLE_TYPE_WIDENING = "delta.enableTypeWidening"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
CHECKPOINT_POLICY = "delta.checkpointPolicy"
ENABLE_IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
ENABLE_CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
#: Bytes per data file that OPTIMIZE, optimized writes and auto compaction
#: aim at (delta-rs's and Databricks' ``delta.targetFileSize``).
TARGET_FILE_SIZE = "delta.targetFileSize"
#: A file-size hint of Databricks Runtime (smaller files for tables that MERGE, UPDATE and DELETE
#: often); open-source delta-spark and delta-rs do not act on it, nor do our writers: kept, validated.
TUNE_FILE_SIZES_FOR_REWRITES = "delta.tuneFileSizesForRewrites"
#: Data files go into a folder of :data:`RANDOM_PREFIX_LENGTH` random alphanumeric characters instead
#: of their partition folder (delta-spark's ``RANDOMIZE_FILE_PREFIXES``; ``partitionValues`` stay
#: in the log); :func:`random_prefix_length`.
RANDOMIZE_FILE_PREFIXES = "delta.randomizeFilePrefixes"
#: The length of those folders' names (delta-spark's ``RANDOM_PREFIX_LENGTH``, default 2).
RANDOM_PREFIX_LENGTH = "delta.randomPrefixLength"
#: ``txn`` actions whose ``lastUpdated`` is older than this are dropped from the state (log replay,
#: checkpoints): delta-spark's ``TRANSACTION_ID_RETENTION_DURATION``; :func:`set_transaction_retention_ms`.
SET_TRANSACTION_RETENTION = "delta.setTransactionRetentionDuration"
#: Writes rebalance their rows by partition (spark/write/optimized_write.py); :func:`optimize_write_enabled`.
AUTO_OPTIMIZE_WRITE = "delta.autoOptimize.optimizeWrite"
#: delta-spark's ``AUTO_COMPACT``: ``true`` or ``false`` (``AutoCompactType``);
#: writes compact the partitions they touched (operations/optimize/auto_compact.py); :func:`auto_compact_enabled`.
AUTO_COMPACT = "delta.autoOptimize.autoCompact"


def optimize_write_enabled(md: Metadata | Mapping[str, str]) -> bool:
    """Whether writes rebalance their rows (``delta.autoOptimize.optimizeWrite``);
    ``md``: the metadata, or its configuration."""
    return _bool(md, AUTO_OPTIMIZE_WRITE, False)


def auto_compact_enabled(md: Metadata | Mapping[str, str]) -> bool:
    """Whether writes compact the partitions they touched (``delta.autoOptimize.autoCompact``);
    ``md``: the metadata, or its configuration."""
    return _bool(md, AUTO_COMPACT, False)


#: Keep symlink format manifests up to date after every commit (:mod:`.symlink_manifest`).
SYMLINK_FORMAT_MANIFEST = "delta.compatibility.symlinkFormatManifest.enabled"
#: How much a data change must see of the commits that beat it (``Serializable``
#: by default, or ``WriteSerializable``): delta-spark's ``ISOLATION_LEVEL``.
ISOLATION_LEVEL = "delta.isolationLevel"
#: The isolation levels, by delta-spark's names.
SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
#: Checks no concurrent add: for commits that change no data (VACUUM START/END); never a table's setting.
SNAPSHOT_ISOLATION = "SnapshotIsolation"
#: The levels a table may be set to, and the one a transaction checks at.
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)
#: The levels a transaction accepts.
TRANSACTION_ISOLATION_LEVELS = (*ISOLATION_LEVELS, SNAPSHOT_ISOLATION)
#: Checkpoints keep each file's stats as a JSON string (``add.stats``; default true), and as typed
#: structs (``add.stats_parsed``, ``add.partitionValues_parsed``; default false, as PROTOCOL.md says).
CHECKPOINT_WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
CHECKPOINT_WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
CHECKPOINT_POLICY_CLASSIC = "classic"
CHECKPOINT_POLICY_V2 = "v2"
#: Table properties whose values are one of a few words.
CHOICE_PROPERTIES = {
    CHECKPOINT_POLICY: (CHECKPOINT_POLICY_CLASSIC, CHECKPOINT_POLICY_V2),
    COLUMN_MAPPING_MODE: ("none", "name", "id"),
}
#: Table properties whose values are booleans.
BOOLEAN_PROPERTIES = frozenset(
    {
        APPEND_ONLY,
        ENABLE_DELETION_VECTORS,
        ENABLE_EXPIRED_LOG_CLEANUP,
        ENABLE_TYPE_WIDENING,
        ENABLE_IN_COMMIT_TIMESTAMPS,
        ENABLE_ROW_TRACKING,
        ENABLE_CHANGE_DATA_FEED,
        TUNE_FILE_SIZES_FOR_REWRITES,
        AUTO_OPTIMIZE_WRITE,
        AUTO_COMPACT,
        SYMLINK_FORMAT_MANIFEST,
        RANDOMIZE_FILE_PREFIXES,
        CHECKPOINT_WRITE_STATS_AS_JSON,
        CHECKPOINT_WRITE_STATS_AS_STRUCT,
    }
)
#: Table properties whose values are intervals (``interval 7 days``).
INTERVAL_PROPERTIES = frozenset({DELETED_FILE_RETENTION, LOG_RETENTION, SET_TRANSACTION_RETENTION})
#: Table properties whose values are byte sizes (``134217728``, ``128mb``).
BYTE_SIZE_PROPERTIES = frozenset({TARGET_FILE_SIZE})
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS = "delta.dataSkippingStatsColumns"

_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 7 * 86_400_000,
}
_INTERVAL_RE = re.compile(r"^\s*(?:interval\s+)?(-?\d+)\s+([a-z]+?)s?\s*$", re.IGNORECASE)


def parse_interval(text: str) -> int:
    """Milliseconds of a Delta interval such as ``interval 7 days``."""
    m = _INTERVAL_RE.match(text or "")
    unit = m[2].lower() if m else ""
    if not m or unit not in _MS:
        raise InvalidInputError(f"cannot parse interval {text!r}: expected e.g. 'interval 7 days'")
    return int(int(m[1]) * _MS[unit])


_BYTE_SIZE_RE = re.compile(r"\s*(\d+)\s*([kmgtp]?)i?b?\s*", re.IGNORECASE)


def parse_byte_size(text: str | None) -> int | None:
    """Bytes of a Spark or Delta size such as ``134217728``, ``128mb`` or
    ``4MiB`` (binary units); None when unset or not a size."""
    m = _BYTE_SIZE_RE.fullmatch(text or "")
    if not m:
        return None
    return int(m[1]) * 1024 ** " kmgtp".index((m[2] or " ").lower())


def _get(md: Metadata | Mapping[str, str], key: str) -> str | None:
    configuration = md.configuration if isinstance(md, Metadata) else md
    value = configuration.get(key)
    return None if value is None else str(value)


def _bool(md: Metadata | Mapping[str, str], key: str, default: bool) -> bool:
    value = _get(md, key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise InvalidInputError(f"table property {key}={value!r} is not a boolean")
    return value.strip().lower() == "true"


def _int(md: Metadata, key: str, default: int) -> int:
    value = _get(md, key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidInputError(f"table property {key}={value!r} is not an integer") from None


def checkpoint_interval(md: Metadata) -> int:
    n = _int(md, CHECKPOINT_INTERVAL, 10)
    if n <= 0:
        raise InvalidInputError(f"table property {CHECKPOINT_INTERVAL} must be positive, got {n}")
    return n


def deleted_file_retention_ms(md: Metadata) -> int:
    value = _get(md, DELETED_FILE_RETENTION)
    return parse_interval(value) if value else int(7 * _MS["day"])


def log_retention_ms(md: Metadata) -> int:
    value = _get(md, LOG_RETENTION)
    return parse_interval(value) if value else int(30 * _MS["day"])


#: The log retention a DROP FEATURE with history truncation uses (delta-spark's
#: ``TABLE_FEATURE_DROP_TRUNCATE_HISTORY_LOG_RETENTION``, 24 hours by default).
TRUNCATE_HISTORY_RETENTION = "delta.dropFeatureTruncateHistory.retentionDuration"


def truncate_history_retention_ms(md: Metadata) -> int:
    value = _get(md, TRUNCATE_HISTORY_RETENTION)
    return parse_interval(value) if value else int(24 * _MS["hour"])


def expired_log_cleanup_enabled(md: Metadata) -> bool:
    return _bool(md, ENABLE_EXPIRED_LOG_CLEANUP, True)


#: ``checkpointProtection``: history before this version goes all at once, or not at all.
CHECKPOINT_PROTECTION_VERSION = "delta.requireCheckpointProtectionBeforeVersion"


def checkpoint_protection_version(md: Metadata) -> int:
    """``delta.requireCheckpointProtectionBeforeVersion`` (0 when unset)."""
    return max(_int(md, CHECKPOINT_PROTECTION_VERSION, 0), 0)


def append_only(md: Metadata) -> bool:
    return _bool(md, APPEND_ONLY, False)


#: ``delta.*`` properties a writer may set: those this implementation honours.
#: Others (constraints, change data feed, feature flags) need table features
#: that are not implemented, and setting one is refused.
#: ``delta.columnMapping.maxColumnId`` is the writer's own to keep.
SETTABLE_PROPERTIES = frozenset(
    {
        APPEND_ONLY,
        ENABLE_DELETION_VECTORS,
        ENABLE_TYPE_WIDENING,
        ENABLE_IN_COMMIT_TIMESTAMPS,
        ENABLE_ROW_TRACKING,
        ENABLE_CHANGE_DATA_FEED,
        COLUMN_MAPPING_MODE,
        CHECKPOINT_INTERVAL,
        CHECKPOINT_POLICY,
        DELETED_FILE_RETENTION,
        LOG_RETENTION,
        ENABLE_EXPIRED_LOG_CLEANUP,
        NUM_INDEXED_COLS,
        STATS_COLUMNS,
        CHECKPOINT_WRITE_STATS_AS_JSON,
        CHECKPOINT_WRITE_STATS_AS_STRUCT,
        TARGET_FILE_SIZE,
        TUNE_FILE_SIZES_FOR_REWRITES,
        AUTO_OPTIMIZE_WRITE,
        AUTO_COMPACT,
        SYMLINK_FORMAT_MANIFEST,
        ISOLATION_LEVEL,
        RANDOMIZE_FILE_PREFIXES,
        RANDOM_PREFIX_LENGTH,
        SET_TRANSACTION_RETENTION,
    }
)


def isolation_level(md: Metadata) -> str:
    """The level UPDATE, DELETE and MERGE check conflicts at:
    ``delta.isolationLevel``, else ``Serializable`` (delta-spark's default in
    ``DeltaConfigs.ISOLATION_LEVEL``; ``WriteSerializable`` is Databricks' and
    delta-rs's other choice). ``SnapshotIsolation``, which only
    maintenance writes use, is refused as a table's level."""
    value = _get(md, ISOLATION_LEVEL)
    if value is None:
        return SERIALIZABLE
    level = _isolation_level_name(value)
    if level is None:
        raise InvalidInputError(
            f"table property {ISOLATION_LEVEL}={value!r} must be one of {', '.join(ISOLATION_LEVELS)}"
        )
    return level


def _isolation_level_name(value: str) -> str | None:
    """The level ``value`` names, in its canonical spelling (case ignored)."""
    return next((level for level in ISOLATION_LEVELS if level.lower() == value.strip().lower()), None)


def checkpoint_policy(md: Metadata) -> str:
    """``delta.checkpointPolicy``: ``classic`` (the default) or ``v2``, which
    needs the ``v2Checkpoint`` table feature (delta-spark's ``CheckpointPolicy``)."""
    value = (_get(md, CHECKPOINT_POLICY) or CHECKPOINT_POLICY_CLASSIC).strip().lower()
    if value not in CHOICE_PROPERTIES[CHECKPOINT_POLICY]:
        raise InvalidInputError(f"table property {CHECKPOINT_POLICY}={value!r} must be classic or v2")
    return value


def deletion_vectors_enabled(md: Metadata) -> bool:
    """Whether DELETE and UPDATE write deletion vectors (merge-on-read)."""
    return _bool(md, ENABLE_DELETION_VECTORS, False)


def symlink_manifest_enabled(md: Metadata) -> bool:
    """Whether every commit updates the symlink format manifests (``delta.compatibility.symlinkFormatManifest.enabled``)."""
    return _bool(md, SYMLINK_FORMAT_MANIFEST, False)


def change_data_feed_enabled(md: Metadata) -> bool:
    """Whether data changes record their changed rows (``delta.enableChangeDataFeed``)."""
    return _bool(md, ENABLE_CHANGE_DATA_FEED, False)


def in_commit_timestamps_enabled(md: Metadata) -> bool:
    """Whether commits carry ``inCommitTimestamp`` (the ``inCommitTimestamp`` feature)."""
    return _bool(md, ENABLE_IN_COMMIT_TIMESTAMPS, False)


def in_commit_timestamps_since(md: Metadata) -> int | None:
    """The first version whose commit carries an in-commit timestamp: the
    enablement version, or 0 for a table created with them; None when off."""
    if not in_commit_timestamps_enabled(md):
        return None
    return max(_int(md, ICT_ENABLEMENT_VERSION, 0), 0)


def row_tracking_enabled(md: Metadata) -> bool:
    """Whether rows keep stable ids and commit versions (``delta.enableRowTracking``)."""
    return _bool(md, ENABLE_ROW_TRACKING, False)


def row_tracking_suspended(md: Metadata) -> bool:
    """Whether writers stop assigning row ids (``delta.rowTrackingSuspended``)."""
    return _bool(md, ROW_TRACKING_SUSPENDED, False)


def type_widening_enabled(md: Metadata) -> bool:
    """Whether schema evolution may widen column types (``typeWidening``)."""
    return _bool(md, ENABLE_TYPE_WIDENING, False)


def num_indexed_cols(md: Metadata) -> int:
    return _int(md, NUM_INDEXED_COLS, 32)


def checkpoint_stats_as_json(md: Metadata) -> bool:
    """Whether checkpoints keep ``add.stats`` (``delta.checkpoint.writeStatsAsJson``, default true)."""
    return _bool(md, CHECKPOINT_WRITE_STATS_AS_JSON, True)


def checkpoint_stats_as_struct(md: Metadata) -> bool:
    """Whether checkpoints hold ``add.stats_parsed`` and ``add.partitionValues_parsed``
    (``delta.checkpoint.writeStatsAsStruct``; false by default, as PROTOCOL.md says; delta-spark
    defaults it to true)."""
    return _bool(md, CHECKPOINT_WRITE_STATS_AS_STRUCT, False)


def random_prefix_length(md: Metadata | Mapping[str, str]) -> int:
    """How many random characters name the folder a new data file goes into instead of its
    partition folder: ``delta.randomPrefixLength`` (2) when ``delta.randomizeFilePrefixes`` is
    true, else 0 (partition folders), as delta-spark's ``Utils.getRandomPrefixLength``."""
    if not _bool(md, RANDOMIZE_FILE_PREFIXES, False):
        return 0
    value = _get(md, RANDOM_PREFIX_LENGTH)
    try:
        n = int(value) if value is not None else 2
    except ValueError:
        n = 0
    if n <= 0:
        raise InvalidInputError(f"table property {RANDOM_PREFIX_LENGTH}={value!r} must be a positive integer")
    return n


def set_transaction_retention_ms(md: Metadata) -> int | None:
    """``delta.setTransactionRetentionDuration`` in milliseconds; None (keep every ``txn``) when unset."""
    value = _get(md, SET_TRANSACTION_RETENTION)
    return parse_interval(value) if value else None


def with_properties(metadata: Metadata, properties: Mapping[str, str] | None) -> Metadata:
    """``metadata`` with ``properties`` set (the same object when nothing changes).

    A ``delta.*`` key must be one this implementation honours
    (:data:`SETTABLE_PROPERTIES`;
    others need table features it does not implement: UnsupportedFeatureError),
    boolean ones must be ``true`` or ``false`` and ``delta.checkpointPolicy``
    ``classic`` or ``v2`` (InvalidInputError). Other
    keys are the user's own, as in delta-spark.
    """
    if not properties:
        return metadata
    for key, value in properties.items():
        if not key:
            raise InvalidInputError("a table property needs a name")
        if key.startswith("delta.constraints."):
            raise InvalidInputError(f"table property {key} is a CHECK constraint: add it with add_constraint")
        if key.startswith("delta.") and key not in SETTABLE_PROPERTIES:
            raise UnsupportedFeatureError(
                f"table property {key} is not supported: it needs a table feature airflow-delta-provider does "
                f"not implement; settable: {', '.join(sorted(SETTABLE_PROPERTIES))}"
            )
        if key in BOOLEAN_PROPERTIES and str(value).lower() not in ("true", "false"):
            raise InvalidInputError(f"table property {key} must be true or false, got {value!r}")
        if key in BYTE_SIZE_PROPERTIES and not (parse_byte_size(str(value).strip()) or 0) > 0:
            raise InvalidInputError(
                f"table property {key} must be a positive size in bytes (e.g. 134217728 or 128mb), got {value!r}"
            )
        choices = CHOICE_PROPERTIES.get(key)
        if choices and str(value).lower() not in choices:
            raise InvalidInputError(f"table property {key} must be one of {', '.join(choices)}, got {value!r}")
        if key in INTERVAL_PROPERTIES:
            parse_interval(str(value))
        if key == ISOLATION_LEVEL and _isolation_level_name(str(value)) is None:
            raise InvalidInputError(f"table property {key} must be one of {', '.join(ISOLATION_LEVELS)}, got {value!r}")
    lowered = BOOLEAN_PROPERTIES | set(CHOICE_PROPERTIES)
    wanted = {k: str(v).lower() if k in lowered else str(v) for k, v in properties.items()}
    if ISOLATION_LEVEL in wanted:
        wanted[ISOLATION_LEVEL] = _isolation_level_name(wanted[ISOLATION_LEVEL]) or wanted[ISOLATION_LEVEL]
    if all(metadata.configuration.get(k) == v for k, v in wanted.items()):
        return metadata
    return replace(metadata, configuration={**metadata.configuration, **wanted})


#: The target size of written and compacted files when ``delta.targetFileSize`` is not set.
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024


def target_file_size(configuration: Mapping[str, str], given: int | None = None) -> int:
    """The target size in bytes: ``given``, else ``delta.targetFileSize``, else 128 MiB."""
    if given is not None:
        if int(given) <= 0:
            raise InvalidInputError(f"the target file size must be positive, not {given}")
        return int(given)
    text = configuration.get(TARGET_FILE_SIZE)
    if text is None:
        return DEFAULT_TARGET_FILE_SIZE
    size = parse_byte_size(text)
    if not size:
        raise InvalidInputError(f"{TARGET_FILE_SIZE}={text!r} is not a size in bytes (e.g. 134217728 or 128mb)")
    return size
