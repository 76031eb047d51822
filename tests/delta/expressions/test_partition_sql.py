"""Partitions as one SQL condition: reserved words, backticks, quotes and backslashes."""

from __future__ import annotations

import pyarrow as pa

from airflow_delta_provider.delta.expressions.partition_sql import partitions_condition
from airflow_delta_provider.delta.scan.skipping import Predicate
from airflow_delta_provider.delta.table import DeltaTable


def test_names_are_always_quoted_and_literals_escaped() -> None:
    assert partitions_condition([{"order": "a"}, {"order": None}]) == "(`order` = 'a') OR (`order` IS NULL)"
    assert partitions_condition([{"we`ird": "x"}]) == "(`we``ird` = 'x')"
    assert partitions_condition([{"p": "it's a \\ back\\'slash"}]) == "(`p` = 'it\\'s a \\\\ back\\\\\\'slash')"
    assert partitions_condition([]) == "" and partitions_condition([{}]) == ""


def test_a_reserved_word_partition_selects_exactly_its_files(tmp_path, new_table, data_file) -> None:
    """``order`` as a partition column, and values with a quote and a backslash, through the core's parser."""
    values = ["a", "it's", "back\\slash", "tail\\", None]
    schema = pa.schema([("id", pa.int64()), ("order", pa.string())])
    root = str(tmp_path)
    adds = [data_file(root, pa.table({"id": [i]}), {"order": v}) for i, v in enumerate(values)]
    new_table(root, schema, ["order"], {}, adds)
    snapshot = DeltaTable(root).snapshot()
    for chosen in (["it's"], ["back\\slash", None], ["tail\\", "a"]):
        where = partitions_condition([{"order": v} for v in chosen])
        Predicate.parse(where)
        assert sorted((f.partition_values["order"] for f in snapshot.files_matching(where)), key=str) == sorted(
            chosen, key=str
        )
