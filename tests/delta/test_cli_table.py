"""Unit tests for ``delta/cli_table.py``: column alignment and clipping."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.cli_table import ELLIPSIS, clip, render


def test_columns_line_up_two_spaces_apart_with_numbers_on_the_right():
    lines = render([(1, "WRITE", None), (10, "CREATE TABLE", "x")], headers=("version", "operation", "note"))
    assert lines == [
        "version  operation     note",
        "      1  WRITE",
        "     10  CREATE TABLE  x",
    ]


def test_without_headers_and_with_ragged_rows():
    assert render([("a:", 1), ("bbb:",)]) == ["a:    1", "bbb:"]
    assert render([]) == [] and render([], headers=("a", "b")) == ["a  b"]


def test_booleans_are_lowercase_text_and_control_characters_become_spaces():
    assert render([(True, "a\tb\nc"), (False, "é")]) == ["true   a b c", "false  é"]


def test_clip_keeps_short_text_and_ends_long_text_in_an_ellipsis():
    assert clip("abc", 3) == "abc"
    assert clip("abcdef", 4) == "abc" + ELLIPSIS and len(clip("x" * 100, 10)) == 10
    with pytest.raises(ValueError, match="width"):
        clip("abc", 0)
