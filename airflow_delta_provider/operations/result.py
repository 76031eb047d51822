"""What every runner returns and the CLI prints: the version, and the operation's metrics.

Each operation declares its metrics once, as a dataclass of
:class:`OperationMetrics` in its folder (``operations/<name>/metrics.py``),
with delta-spark's metric names: the commit's ``operationMetrics`` and the
XCom value are both built from it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: Field metadata key for a metric whose delta-spark name is not its field name in camelCase.
METRIC_NAME = "metric_name"


def metric_name(field: dataclasses.Field[Any]) -> str:
    """delta-spark's name of a metrics field: ``num_updated_rows`` -> ``numUpdatedRows``."""
    named = field.metadata.get(METRIC_NAME)
    if named is not None:
        return str(named)
    head, *rest = field.name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@dataclass(frozen=True)
class OperationMetrics(Mapping[str, Any]):
    """An operation's metrics, typed, read as a mapping by delta-spark's names.

    A field that is None is left out (delta-spark writes only the metrics an
    operation has). :meth:`commit_metrics` is the commit's ``operationMetrics``.
    """

    def _items(self) -> Iterator[tuple[str, Any]]:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                yield metric_name(f), value

    def __getitem__(self, name: str) -> Any:
        for key, value in self._items():
            if key == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._items())

    def __len__(self) -> int:
        return sum(1 for _ in self._items())

    def to_dict(self) -> dict[str, Any]:
        """The metrics by delta-spark's names, as numbers (the XCom value's ``metrics``)."""
        return dict(self._items())

    #: Metrics of the result that delta-spark does not record in the commit (its timings, say).
    result_only: ClassVar[tuple[str, ...]] = ()

    def commit_metrics(self) -> dict[str, Any]:
        """The commit's ``operationMetrics``: what :meth:`to_dict` has, without nested
        values and without the :attr:`result_only` ones."""
        return {
            key: value
            for key, value in self._items()
            if not isinstance(value, (dict, list)) and key not in self.result_only
        }


@dataclass
class CommandResult:
    """What one operation did.

    ``version`` is the committed table version, or None when nothing was
    committed (no matching rows, a dry run, an already-applied txn, a
    checkpoint). ``files`` is only set by a dry-run vacuum.
    """

    table: str
    operation: str
    version: int | None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    files: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table": self.table,
            "operation": self.operation,
            "version": self.version,
            "metrics": dict(self.metrics),
        }
        if self.files is not None:
            out["files"] = list(self.files)
        return out

    def to_json(self) -> str:
        """One line of JSON: the last line the CLI prints on stdout."""
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=False, default=str)
