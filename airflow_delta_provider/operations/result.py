"""The result every Spark command returns and the CLI prints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


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
    metrics: dict[str, Any] = field(default_factory=dict)
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
