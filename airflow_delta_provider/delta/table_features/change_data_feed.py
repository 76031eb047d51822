"""The ``changeDataFeed`` table feature (PROTOCOL.md "Add CDC File", "Change Data Files").

With ``delta.enableChangeDataFeed`` on, a commit that changes rows records
them: UPDATE, DELETE and MERGE write ``cdc`` files under ``_change_data``
whose ``_change_type`` column says what each row is. Here: the names the
protocol gives those files, columns and values, and the rule that a table
recording its changes has no column named like the feed's own. Reading the
feed of a version range is :mod:`airflow_delta_provider.delta.table_changes`.
"""

from __future__ import annotations

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError

#: The folder of change data files, under the table root.
CHANGE_DATA_DIR = "_change_data"
#: The columns a change row carries besides the table's.
CHANGE_TYPE_COLUMN = "_change_type"
COMMIT_VERSION_COLUMN = "_commit_version"
COMMIT_TIMESTAMP_COLUMN = "_commit_timestamp"
CHANGE_COLUMNS = (CHANGE_TYPE_COLUMN, COMMIT_VERSION_COLUMN, COMMIT_TIMESTAMP_COLUMN)
#: Column names a table recording its changes cannot have (delta-spark's rule).
RESERVED_COLUMNS = frozenset(c.lower() for c in CHANGE_COLUMNS)
#: The values of ``_change_type``.
INSERT, DELETE, UPDATE_PREIMAGE, UPDATE_POSTIMAGE = "insert", "delete", "update_preimage", "update_postimage"
CHANGE_TYPES = (INSERT, DELETE, UPDATE_PREIMAGE, UPDATE_POSTIMAGE)


def is_required(metadata: Metadata) -> bool:
    """Whether ``delta.enableChangeDataFeed`` asks for the feature."""
    return table_properties.change_data_feed_enabled(metadata)


def check_column_names(metadata: Metadata) -> None:
    """Refuse the change data feed on a table with a column named like one of
    the feed's own (``_change_type``, ``_commit_version``, ``_commit_timestamp``)."""
    if not table_properties.change_data_feed_enabled(metadata):
        return
    clashing = sorted(
        f["name"] for f in metadata.schema_json.get("fields", ()) if f["name"].lower() in RESERVED_COLUMNS
    )
    if clashing:
        raise InvalidInputError(
            f"column {clashing[0]!r} is reserved on a table with {table_properties.ENABLE_CHANGE_DATA_FEED}=true "
            f"(the change data feed adds {', '.join(CHANGE_COLUMNS)}): rename it or leave the feed off"
        )


def check_deterministic_values(table_uri: str, sqls: list[str]) -> None:
    """On a table recording its changes, refuse new values that two
    evaluations could give differently (``rand()``, ``uuid()``,
    ``current_timestamp()``): an engine writes the data and the change rows
    in two queries, and they must agree."""
    from airflow_delta_provider.delta.expressions.parse import nondeterministic_calls

    for sql in sqls:
        calls = nondeterministic_calls(sql, per_query=True)
        if calls:
            raise InvalidInputError(
                f"{sql!r} calls {', '.join(calls)}, whose value may differ between the data and the change "
                f"rows of table {table_uri} (delta.enableChangeDataFeed=true); give a literal value instead"
            )
