"""The kinds of change ALTER takes, one per commit.

Kept apart from :mod:`.alter` (which needs pyarrow) so that the Airflow layer
can check an operator's change when a DAG file is parsed, from the same list
the core applies.
"""

from __future__ import annotations

#: Each change is a JSON object with exactly one of these keys.
ALTER_CHANGES = (
    "add_columns",
    "rename_column",
    "drop_columns",
    "alter_column",
    "set_properties",
    "unset_properties",
    "add_constraint",
    "drop_constraint",
    "cluster_by",
    "drop_feature",
)
