"""MERGE's clause language, checked before any engine work.

A MERGE takes an ordered list of WHEN clauses, as JSON::

    [{"when": "matched", "condition": "s.op = 'D'", "delete": true},
     {"when": "matched", "update": "*"},
     {"when": "not_matched", "insert": {"id": "s.id", "amount": "s.amount"}},
     {"when": "not_matched_by_source", "condition": "t.day < '2024-01-01'", "delete": true}]

For each target row matched by a source row, the first ``matched`` clause
whose condition holds acts; for each source row that matches nothing, the
first ``not_matched`` clause; for each target row that no source row matches,
the first ``not_matched_by_source`` clause. A row no clause acts on is left
as it is (or, for a source row, not inserted). This is delta-spark's
``MERGE INTO`` (``DeltaMergeInto``), with its rules:

- ``matched`` clauses update or delete, ``not_matched`` clauses insert, and
  ``not_matched_by_source`` clauses update or delete;
- within each kind, only the last clause may omit its condition (a clause
  without one would make every later clause of its kind unreachable);
- ``"*"`` means every column by name (``UPDATE SET *``, ``INSERT *``); it is
  not allowed in ``not_matched_by_source``, which sees no source row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_delta_provider.delta.errors import InvalidArgumentError

MATCHED = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"
UPDATE, DELETE, INSERT = "update", "delete", "insert"
STAR = "*"

#: The actions each kind of clause may take.
ACTIONS = {MATCHED: (UPDATE, DELETE), NOT_MATCHED: (INSERT,), NOT_MATCHED_BY_SOURCE: (UPDATE, DELETE)}
_KEYS = frozenset({"when", "condition", UPDATE, DELETE, INSERT})
#: delta-spark's names of the clause kinds in ``operationParameters``.
_PARAMETER = {
    MATCHED: "matchedPredicates",
    NOT_MATCHED: "notMatchedPredicates",
    NOT_MATCHED_BY_SOURCE: "notMatchedBySourcePredicates",
}


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause. ``assignments`` is ``{column: SQL}``, or None for ``*``
    (and for a delete)."""

    when: str
    action: str
    condition: str | None = None
    assignments: Mapping[str, str] | None = None

    @property
    def is_star(self) -> bool:
        return self.action != DELETE and self.assignments is None

    def describe(self, index: int) -> str:
        """How error messages name the clause: ``clause 2 (when matched update)``."""
        return f"clause {index + 1} (when {self.when} {self.action})"


def parse_clauses(clauses: str | Sequence[Mapping[str, Any]]) -> tuple[MergeClause, ...]:
    """The clauses of a MERGE, from JSON text or a list of dicts; InvalidArgumentError names the first problem."""
    if isinstance(clauses, str):
        try:
            clauses = json.loads(clauses)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"MERGE clauses are not valid JSON: {exc}") from None
    if not isinstance(clauses, (list, tuple)) or not clauses:
        raise InvalidArgumentError('MERGE needs a non-empty list of clauses, e.g. [{"when": "matched", "update": "*"}]')
    parsed = tuple(_parse_clause(i, raw) for i, raw in enumerate(clauses))
    for when in ACTIONS:
        of_kind = [(i, c) for i, c in enumerate(parsed) if c.when == when]
        for i, clause in of_kind[:-1]:
            if clause.condition is None:
                raise InvalidArgumentError(
                    f"{clause.describe(i)} has no condition but is not the last {when} clause: "
                    f"only the last {when} clause may omit its condition"
                )
    return parsed


def _parse_clause(index: int, raw: Any) -> MergeClause:
    where = f"clause {index + 1}"
    if not isinstance(raw, Mapping):
        raise InvalidArgumentError(f"{where} is not an object: {raw!r}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise InvalidArgumentError(f"{where} has unknown keys {unknown}; a clause has when, condition and one action")
    when = raw.get("when")
    if not isinstance(when, str) or when not in ACTIONS:
        raise InvalidArgumentError(f"{where}: when must be one of {', '.join(ACTIONS)}, not {when!r}")
    actions = [a for a in (UPDATE, DELETE, INSERT) if a in raw]
    if len(actions) != 1:
        raise InvalidArgumentError(f"{where} needs exactly one action of {', '.join(ACTIONS[when])}, got {actions}")
    action = actions[0]
    if action not in ACTIONS[when]:
        raise InvalidArgumentError(f"{where}: a {when} clause may {' or '.join(ACTIONS[when])}, not {action}")
    condition = raw.get("condition")
    if condition is not None and (not isinstance(condition, str) or not condition.strip()):
        raise InvalidArgumentError(f"{where}: condition must be a non-empty SQL string, or left out")
    value = raw[action]
    if action == DELETE:
        if value is not True:
            raise InvalidArgumentError(f'{where}: write the delete action as "delete": true')
        return MergeClause(when, action, condition)
    if value == STAR:
        if when == NOT_MATCHED_BY_SOURCE:
            raise InvalidArgumentError(f"{where}: a not_matched_by_source update has no source row, so it cannot use *")
        return MergeClause(when, action, condition)
    if not isinstance(value, Mapping) or not value:
        raise InvalidArgumentError(f'{where}: {action} takes "*" or a non-empty object of column: SQL expression')
    for column, sql in value.items():
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgumentError(f"{where}: the expression for column {column!r} must be a non-empty SQL string")
    return MergeClause(when, action, condition, dict(value))


def clauses_json(clauses: Sequence[MergeClause]) -> str:
    """The clauses as the JSON the Spark CLI's ``--clauses`` takes (the inverse of :func:`parse_clauses`)."""
    out = []
    for c in clauses:
        item: dict[str, Any] = {"when": c.when}
        if c.condition is not None:
            item["condition"] = c.condition
        item[c.action] = True if c.action == DELETE else (STAR if c.assignments is None else dict(c.assignments))
        out.append(item)
    return json.dumps(out)


def operation_parameters(on: str, clauses: Sequence[MergeClause]) -> dict[str, str]:
    """delta-spark's MERGE ``operationParameters``: the join condition and,
    per kind of clause, ``[{"predicate"?, "actionType"}]``, JSON-encoded as
    delta-spark encodes them (compact, the predicate first)."""
    compact = (",", ":")
    out = {"predicate": json.dumps([on], separators=compact)}
    for when, key in _PARAMETER.items():
        out[key] = json.dumps(
            [
                {**({"predicate": c.condition} if c.condition is not None else {}), "actionType": c.action}
                for c in clauses
                if c.when == when
            ],
            separators=compact,
        )
    return out


__all__ = [
    "ACTIONS",
    "DELETE",
    "INSERT",
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "STAR",
    "UPDATE",
    "MergeClause",
    "clauses_json",
    "operation_parameters",
    "parse_clauses",
]
