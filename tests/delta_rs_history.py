"""A table whose history mixes data changes with commits that change no row,
written by delta-rs (an independent writer), for the watchers' filter tests.

=======  ==================  ==============================================
version  operation           what it does
=======  ==================  ==============================================
0        WRITE (create)      3 rows in ds=2024-01-01
1        WRITE               2 rows in ds=2024-01-01
2        OPTIMIZE            compacts ds=2024-01-01 (``dataChange: false``)
3        SET TBLPROPERTIES   metadata only
4        WRITE               4 rows in ds=2024-01-02
5        VACUUM START        no file action
6        VACUUM END          no file action
7        DELETE              1 row of ds=2024-01-01, file rewritten
=======  ==================  ==============================================
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

DAY_1, DAY_2, DAY_3 = "2024-01-01", "2024-01-02", "2024-01-03"

#: The versions each filter passes, by the filter's arguments.
EXPECTED = {
    "every commit": ({"data_changes_only": False}, [0, 1, 2, 3, 4, 5, 6, 7]),
    "data changes": ({}, [0, 1, 4, 7]),
    "WRITE only": ({"operations": ["WRITE"]}, [0, 1, 4]),
    "OPTIMIZE, every commit": ({"operations": ["optimize"], "data_changes_only": False}, [2]),
    "day 2": ({"partition": {"ds": DAY_2}}, [4]),
    "day 1 as SQL": ({"partition": f"ds = '{DAY_1}'"}, [0, 1, 7]),
    "day 1, every commit": ({"partition": {"ds": DAY_1}, "data_changes_only": False}, [0, 1, 2, 7]),
    "day 3": ({"partition": {"ds": DAY_3}}, []),
}


def rows(ds: str, n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "ds": pa.array([ds] * n)})


def append(root: Path | str, ds: str, n: int, start: int = 0) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(root), rows(ds, n, start), mode="append", partition_by=["ds"])


def write_mixed_history(root: Path | str) -> str:
    """Write versions 0-7 of the table above at ``root``; returns its path."""
    from deltalake import DeltaTable, write_deltalake

    uri = str(root)
    write_deltalake(uri, rows(DAY_1, 3), partition_by=["ds"])
    append(uri, DAY_1, 2, start=10)
    DeltaTable(uri).optimize.compact()
    DeltaTable(uri).alter.set_table_properties({"delta.logRetentionDuration": "interval 30 days"})
    append(uri, DAY_2, 4)
    DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    DeltaTable(uri).delete(f"ds = '{DAY_1}' AND id = 0")
    operations = [h["operation"] for h in sorted(DeltaTable(uri).history(), key=lambda h: h["version"])]
    assert operations == [
        "WRITE", "WRITE", "OPTIMIZE", "SET TBLPROPERTIES", "WRITE", "VACUUM START", "VACUUM END", "DELETE",
    ], operations  # fmt: skip
    return uri
