"""A dotted reference split into its names, quoted parts kept whole."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.expressions.quoting import quote_identifier, split_identifier


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a", ["a"]),
        ("a.b", ["a", "b"]),
        ("`a.b`", ["a.b"]),
        ("`a`.`b.c`.d", ["a", "b.c", "d"]),
        ("`we``ird`.x", ["we`ird", "x"]),
    ],
)
def test_a_reference_splits_into_its_names(text: str, names: list[str]) -> None:
    assert split_identifier(text) == names


@pytest.mark.parametrize("parts", [["a"], ["a.b", "c"], ["we`ird", "x y", "ü"]])
def test_split_undoes_quoting_part_by_part(parts: list[str]) -> None:
    assert split_identifier(".".join(quote_identifier(p) for p in parts)) == parts
