"""Tests for delta/identity.py: identity column definitions and high-water marks."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError, UnsupportedFeatureError
from airflow_delta_provider.delta.table_features.identity_columns import (
    HIGH_WATER_MARK,
    Identity,
    check_explicit_insert,
    check_not_updated,
    identity_columns,
    with_high_water_marks,
)


def schema(md: dict, dtype: str = "long") -> dict:
    return {
        "type": "struct",
        "fields": [
            {"name": "id", "type": dtype, "nullable": True, "metadata": md},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }


def test_identity_columns_are_read_from_field_metadata():
    md = {"delta.identity.start": 5, "delta.identity.step": 2, "delta.identity.allowExplicitInsert": False}
    assert identity_columns(schema(md)) == [Identity("id", 5, 2, None, False)]
    md[HIGH_WATER_MARK] = 9
    (ident,) = identity_columns(schema(md))
    assert ident.first_value == 11 and ident.high_water_mark == 9
    assert identity_columns(schema({})) == []


@pytest.mark.parametrize(
    "md, error",
    [
        ({"delta.identity.start": 1}, InvalidInputError),
        ({"delta.identity.start": 1, "delta.identity.step": 0}, InvalidInputError),
        ({"delta.identity.start": 1, "delta.identity.step": 2, HIGH_WATER_MARK: 4}, InvalidInputError),
    ],
)
def test_bad_identity_metadata_is_refused(md, error):
    with pytest.raises(error):
        identity_columns(schema(md))


def test_only_long_identity_columns():
    with pytest.raises(UnsupportedFeatureError, match="only long"):
        identity_columns(schema({"delta.identity.start": 1, "delta.identity.step": 1}, dtype="integer"))


def test_new_high_water_marks_stay_on_the_grid_and_never_go_back():
    up = Identity("id", 1, 3, None, True)
    assert up.new_high_water_mark([]) is None
    assert up.new_high_water_mark([1, 7, 4]) == 7
    assert up.new_high_water_mark([8]) == 10  # a given value off the grid: rounded on
    assert up.new_high_water_mark([-50]) is None  # before the start: ignored
    assert Identity("id", 1, 3, 13, True).new_high_water_mark([4]) == 13
    down = Identity("id", -1, -3, None, True)
    assert down.new_high_water_mark([-4, -7]) == -7
    assert down.new_high_water_mark([-5]) == -7
    assert down.new_high_water_mark([5]) is None


def test_refusals_and_schema_update():
    s = schema({"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": "false"})
    with pytest.raises(InvalidInputError, match="cannot set identity column"):
        check_not_updated(s, ["ID"])
    check_not_updated(s, ["v"])
    (ident,) = identity_columns(s)
    with pytest.raises(InvalidInputError, match="GENERATED ALWAYS"):
        check_explicit_insert(ident)
    updated = with_high_water_marks(s, {"id": 42})
    assert updated["fields"][0]["metadata"][HIGH_WATER_MARK] == 42
    assert HIGH_WATER_MARK not in s["fields"][0]["metadata"]


def test_an_older_schema_keeps_the_current_high_water_mark():
    """RESTORE brings an older schema back; the mark never goes back with it
    (delta-spark's copySchemaWithMergedHighWaterMarks)."""
    from airflow_delta_provider.delta.table_features.identity_columns import keep_high_water_marks

    base = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False}
    old, now = schema(dict(base)), schema({**base, HIGH_WATER_MARK: 40})
    assert keep_high_water_marks(old, now)["fields"][0]["metadata"][HIGH_WATER_MARK] == 40
    ahead = schema({**base, HIGH_WATER_MARK: 50})
    assert keep_high_water_marks(ahead, now) == ahead
    assert keep_high_water_marks(schema({}), now) == schema({})
