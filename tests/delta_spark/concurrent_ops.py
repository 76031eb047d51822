"""The operations the mixed-writer tests run, as delta-spark SQL and as our CLI.

One table, ``id BIGINT, p STRING, v BIGINT`` partitioned by ``p``. Each
operation has a unique name that its commit carries (delta-spark: the
``userMetadata`` of its commitInfo; ours: the operation token), so every
version of the log can be mapped back to the operation that made it. The
operations are chosen so that a serial replay is easy to model and the order
matters (an UPDATE doubles ``v``), and so that delta-spark's conflict rules
decide at the granularity of a partition: UPDATE and MERGE read exactly one
partition (``p = 'X'``) and rewrite every file of it they touch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_delta_provider.delta.actions.model import TOKEN_TAG

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
PARTITIONS = ("a", "b", "c")
#: The seed rows: three per partition, v = id.
SEED = {i: (PARTITIONS[i // 3], i) for i in range(9)}
#: The delta-spark conf whose value its commits record as ``userMetadata``.
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
ALTER_PROPERTY = "concurrency.test"

DELTA_SPARK, OURS, OURS_CLI = "delta-spark", "ours", "ours-cli"


@dataclass(frozen=True)
class Op:
    """One operation: ``kind`` on partition ``part`` with ``rows`` (id, v) or ``k``."""

    name: str
    kind: str  # append | update | merge | delete | alter
    engine: str  # DELTA_SPARK | OURS (in-process) | OURS_CLI (a process of its own)
    part: str = ""
    rows: tuple[tuple[int, int], ...] = ()
    k: int = 0

    def source(self, sources: Path) -> str:
        """The parquet folder holding this operation's rows (APPEND and MERGE)."""
        return str(sources / self.name)

    def write_source(self, sources: Path) -> None:
        if self.rows:
            folder = Path(self.source(sources))
            folder.mkdir(parents=True)
            ids, vs = zip(*self.rows)
            table = pa.table({"id": list(ids), "p": [self.part] * len(ids), "v": list(vs)}, schema=SCHEMA)
            pq.write_table(table, folder / "part-0.parquet")

    @property
    def reads_partition(self) -> bool:
        """Whether it reads (and rewrites) partition ``part`` rather than appending blindly."""
        return self.kind in ("update", "merge", "delete")

    # --- delta-spark --------------------------------------------------------

    def sql(self, table: str, sources: Path) -> str:
        if self.kind == "append":
            return f"INSERT INTO {table} SELECT id, p, v FROM parquet.`{self.source(sources)}`"
        if self.kind == "update":
            return f"UPDATE {table} SET v = v * 2 + {self.k} WHERE p = '{self.part}'"
        if self.kind == "delete":
            return f"DELETE FROM {table} WHERE p = '{self.part}'"
        if self.kind == "merge":
            return (
                f"MERGE INTO {table} AS t USING parquet.`{self.source(sources)}` AS s "
                f"ON t.p = '{self.part}' AND t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = t.v + s.v WHEN NOT MATCHED THEN INSERT *"
            )
        if self.kind == "alter":
            return f"ALTER TABLE {table} SET TBLPROPERTIES ('{ALTER_PROPERTY}' = '{self.name}')"
        raise ValueError(self.kind)

    # --- ours ---------------------------------------------------------------

    def argv(self, path: str, sources: Path) -> list[str]:
        """The argv of our CLI (``python -m airflow_delta_provider.spark``)."""
        common = ["--token", self.name]
        if self.kind == "append":
            return ["append", path, "--source", self.source(sources), "--format", "parquet", *common]
        if self.kind == "update":
            return ["update", path, "--condition", f"p = '{self.part}'", "--set", f"v=v * 2 + {self.k}", *common]
        if self.kind == "delete":
            return ["delete", path, "--condition", f"p = '{self.part}'", *common]
        if self.kind == "merge":
            clauses = [{"when": "matched", "update": {"v": "t.v + s.v"}}, {"when": "not_matched", "insert": "*"}]
            return [
                "merge", path, "--source", self.source(sources), "--on", f"t.p = '{self.part}' AND t.id = s.id",
                "--clauses", json.dumps(clauses), *common,
            ]  # fmt: skip
        if self.kind == "alter":
            change = {"set_properties": {ALTER_PROPERTY: self.name}}
            return ["alter", path, "--change", json.dumps(change), *common]
        raise ValueError(self.kind)

    # --- the serial model ---------------------------------------------------

    def apply(self, state: dict[int, tuple[str, int]]) -> None:
        """Apply this operation to ``state`` (id -> (p, v)), as a serial run would."""
        if self.kind == "append":
            for i, v in self.rows:
                assert i not in state, f"{self.name}: id {i} twice"
                state[i] = (self.part, v)
        elif self.kind == "update":
            for i, (p, v) in list(state.items()):
                if p == self.part:
                    state[i] = (p, v * 2 + self.k)
        elif self.kind == "delete":
            for i, (p, _) in list(state.items()):
                if p == self.part:
                    del state[i]
        elif self.kind == "merge":
            for i, v in self.rows:
                if i in state and state[i][0] == self.part:
                    state[i] = (self.part, state[i][1] + v)
                else:
                    assert i not in state, f"{self.name}: id {i} in another partition"
                    state[i] = (self.part, v)


# --- conflicts ------------------------------------------------------------------

#: Conflict classes by the family both implementations share:
#: delta-spark's ``XException`` is our ``XError``.
_CONFLICT = re.compile(
    r"(ConcurrentAppend|ConcurrentDeleteRead|ConcurrentDeleteDelete|MetadataChanged|ProtocolChanged"
    r"|ConcurrentTransaction|ConcurrentWrite)(?:Exception|Error)"
)


def conflict_family(text: str) -> str | None:
    """``ConcurrentAppend`` for delta-spark's ``ConcurrentAppendException`` and our ``ConcurrentAppendError``."""
    found = _CONFLICT.search(text)
    return found.group(1) if found else None


def delta_spark_winner(message: str) -> int | str | None:
    """The winning commit a delta-spark conflict names: its version (``...
    committed at version N``), or else the name of its operation (the
    ``userMetadata`` or operation token of the ``Conflicting commit`` JSON)."""
    version = re.search(r"committed at version (\d+)", message)
    if version:
        return int(version.group(1))
    found = re.search(r"Conflicting commit:\s*(\{.*\})", message)
    if not found:
        return None
    try:
        info: dict[str, Any] = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    return info.get("userMetadata") or (info.get("tags") or {}).get(TOKEN_TAG)


def our_winner(message: str) -> int | None:
    """The winning version our conflict message names (``... at version N (OP)``)."""
    found = re.search(r"at version (\d+)", message)
    return int(found.group(1)) if found else None
