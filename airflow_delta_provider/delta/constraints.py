"""CHECK constraints (the ``checkConstraints`` writer feature).

A table's CHECK constraints are its ``delta.constraints.<name>`` properties,
each a Spark SQL boolean expression over its columns (PROTOCOL.md "Check
Constraints"). Every row a writer writes must make each one true; as in
delta-spark, a row for which one is NULL breaks it too. The engine enforces
them in its write job (:func:`airflow_delta_provider.spark.write.enforce_constraints`);
this module names them and says which columns they read.

Constraints are added and dropped with ALTER TABLE
(:class:`~airflow_delta_provider.delta.schema_changes.AddConstraint`), never
set as plain properties: adding one must first check the rows already there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from airflow_delta_provider.delta.actions import Metadata
from airflow_delta_provider.delta.errors import InvalidInputError

PREFIX = "delta.constraints."
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def table_constraints(metadata: Metadata | Mapping[str, str]) -> dict[str, str]:
    """``{name: expression}`` of the table's CHECK constraints."""
    configuration = metadata.configuration if isinstance(metadata, Metadata) else metadata
    return {key[len(PREFIX) :]: value for key, value in configuration.items() if key.startswith(PREFIX)}


def check_name(name: str) -> str:
    """A constraint name as stored: lower case (delta-spark's), letters, digits and ``_``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInputError(f"invalid constraint name {name!r}: use letters, digits and _, not starting with a digit")
    return name.lower()


def referenced_columns(expression: str) -> set[str]:
    """The top-level column names ``expression`` reads, lower case (empty when sqlglot cannot parse it)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(expression, read="spark")
    except SqlglotError:
        return set()
    return {c.parts[0].name.lower() for c in tree.find_all(exp.Column)}


def constraints_reading(metadata: Metadata, column: str) -> list[str]:
    """The names of the constraints whose expression reads top-level ``column``."""
    return sorted(n for n, sql in table_constraints(metadata).items() if column.lower() in referenced_columns(sql))


__all__ = ["PREFIX", "check_name", "constraints_reading", "referenced_columns", "table_constraints"]
