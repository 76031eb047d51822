"""CHECK constraints (the ``checkConstraints`` writer feature).

A table's CHECK constraints are its ``delta.constraints.<name>`` properties,
each a Spark SQL boolean expression over its columns (PROTOCOL.md "Check
Constraints"). Every row a writer writes must make each one true; as in
delta-spark, a row for which one is NULL breaks it too. The engine enforces
them in its write job (:func:`airflow_delta_provider.spark.write.files.enforce_constraints`);
this module names them and says which columns they read.

Constraints are added and dropped with ALTER TABLE
(:class:`~airflow_delta_provider.operations.alter.plan.AddConstraint`), never
set as plain properties: adding one must first check the rows already there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from airflow_delta_provider.delta.actions.model import Metadata
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
        raise InvalidInputError(
            f"invalid constraint name {name!r}: use letters, digits and _, not starting with a digit"
        )
    return name.lower()


def referenced_columns(expression: str) -> set[str] | None:
    """The top-level column names ``expression`` reads (for ``s.x``: ``s``),
    lower case; None when it cannot be parsed (callers then assume it may
    read any column). See :func:`airflow_delta_provider.delta.expressions.parse.referenced_columns`."""
    from airflow_delta_provider.delta.expressions.parse import referenced_columns as read

    return read(expression)


def find(metadata: Metadata, name: str) -> tuple[str, str] | None:
    """(the name as stored, its expression) of constraint ``name``, matched case-insensitively."""
    return next(((n, sql) for n, sql in table_constraints(metadata).items() if n.lower() == name.lower()), None)


def constraints_reading(metadata: Metadata, column: str) -> list[str]:
    """The constraints whose expression may read top-level ``column`` (or a field in it)."""
    out = []
    for name, sql in table_constraints(metadata).items():
        read = referenced_columns(sql)
        if read is None or column.lower() in read:
            out.append(name)
    return sorted(out)


def check_resolvable(metadata: Metadata) -> None:
    """Every constraint reads only columns the schema has (a schema change, or
    an overwrite of the schema, may not leave one behind)."""
    from airflow_delta_provider.delta.expressions.parse import columns_missing

    for name, sql in sorted(table_constraints(metadata).items()):
        if missing := columns_missing(sql, metadata.schema_json):
            raise InvalidInputError(
                f"CHECK constraint {name} ({sql}) reads column(s) {', '.join(missing)}, which the new schema "
                "lacks; drop the constraint first"
            )


__all__ = [
    "PREFIX",
    "check_name",
    "check_resolvable",
    "constraints_reading",
    "find",
    "referenced_columns",
    "table_constraints",
]
