"""Partitions as one Spark SQL condition: the ``where`` of the autopilot's
OPTIMIZE and the ``predicate`` auto compaction records.

``[{"day": "a"}, {"day": None}]`` becomes ``(`day` = 'a') OR (`day` IS NULL)``.
Every column is backtick-quoted (a backtick in a name doubled), so reserved
words (``order``) and odd names work; in a string literal a backslash and a
single quote are escaped with a backslash, as Spark's parser reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from airflow_delta_provider.delta.expressions.quoting import quote_identifier


def string_literal(value: str) -> str:
    """``value`` as a single-quoted Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def partitions_condition(partitions: Iterable[Mapping[str, str | None]]) -> str:
    """A condition that holds in exactly these partitions (their values in the
    order given); the empty string for none or for an unpartitioned table's one."""
    terms = []
    for values in partitions:
        if not values:
            continue
        terms.append(
            "("
            + " AND ".join(
                f"{quote_identifier(name)} IS NULL"
                if value is None
                else f"{quote_identifier(name)} = {string_literal(value)}"
                for name, value in values.items()
            )
            + ")"
        )
    return " OR ".join(terms)


__all__ = ["partitions_condition", "string_literal"]
