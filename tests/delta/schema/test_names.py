"""Tests for :mod:`airflow_delta_provider.delta.schema.names`."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.schema.names import check_column_names
from tests.delta.schema.builders import array, field, map_, struct


def test_valid_names_pass():
    nested = struct(field("a_b", "long"))
    check_column_names(struct(field("a_b", "long"), field("Ünïcode-ok.dot", nested)))


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (struct(field("id", "long"), field("ID", "long")), "ID"),
        (struct(field("s", struct(field("x", "long"), field("X", "long")))), "s.X"),
        (struct(field("a", array(struct(field("k", "long"), field("K", "int"))))), "a.element.K"),
        (struct(field("m", map_("string", struct(field("v", "long"), field("V", "long"))))), "m.value.V"),
    ],
)
def test_duplicate_names_are_refused(schema, named):
    with pytest.raises(InvalidInputError, match="duplicate") as err:
        check_column_names(schema)
    assert named in str(err.value)


@pytest.mark.parametrize("char", list(" ,;{}()\n\t="))
def test_invalid_characters_are_refused(char):
    with pytest.raises(InvalidInputError, match="invalid column name") as err:
        check_column_names(struct(field("ok", struct(field(f"bad{char}name", "long")))))
    assert "ok.`bad" in str(err.value) or "ok.bad" in str(err.value)
