"""``spec == parse(argv(spec))`` for specs that hypothesis generates from the fields' metadata.

The argv codec (:mod:`airflow_delta_provider.operations.argv`) is generated
from the specs, as the operators are; this checks the two directions agree
for every operation, every kind of field and every value a field can hold.
"""

from __future__ import annotations

import dataclasses
import json
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.argv import parse_request
from airflow_delta_provider.operations.registry import SPECS
from airflow_delta_provider.operations.spec.fields import (
    JOINED,
    NEGATED_SWITCH,
    PAIRS,
    POSITIONAL,
    REPEATED,
    SWITCH,
    argument_of,
)

# Words a command line carries as they are: no leading dash (argparse would read an option).
_WORD = st.text(alphabet=string.ascii_letters + string.digits + " _.'()=<>`ü", min_size=1, max_size=12).filter(
    lambda w: w.strip() == w and w.strip()
)
_NAME = st.text(alphabet=string.ascii_letters + string.digits + "_ ü", min_size=1, max_size=8).filter(
    lambda w: w.strip() == w and w.strip()
)
#: JSON fields hold JSON their spec checks: valid samples, as the CLI and the operators give them.
_JSON = {
    "source_views": [json.dumps({"orders": {"path": "/in/o", "format": "delta", "version": 3}})],
    "clauses": [json.dumps([{"when": "matched", "update": "*"}, {"when": "not_matched", "insert": "*"}])],
    "change": [json.dumps({"set_properties": {"k": "v"}}), json.dumps({"drop_columns": ["a"]})],
    "table_schema": [
        json.dumps({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]})
    ],
}

#: Optional fields that other fields' rules constrain: mostly left out, so most drawn specs are valid.
_RARE = {"source_sql", "source_views", "replace_where", "partition_overwrite_mode", "txn_app_id", "txn_version",
         "timestamp", "drop_feature", "source_version"}  # fmt: skip


def _values(field: dataclasses.Field) -> st.SearchStrategy:
    argument = argument_of(field)
    kind = argument.kind
    optional = field.default is not dataclasses.MISSING and field.default is None
    if kind == POSITIONAL:
        return _WORD.map(lambda w: "/t/" + w)
    if kind == SWITCH:
        return st.just(True) if argument.required else st.booleans()
    if kind == NEGATED_SWITCH:
        return st.booleans()
    if kind == REPEATED:
        return st.lists(_NAME, max_size=3).map(tuple)
    if kind == JOINED:
        return st.lists(_NAME.filter(lambda n: "," not in n), max_size=3).map(tuple)
    if kind == PAIRS:
        key = _NAME.filter(lambda k: "=" not in k)
        return st.lists(st.tuples(key, st.text(alphabet=string.ascii_letters + "=, ", max_size=6)), max_size=3).map(
            tuple
        )
    if argument.choices is not None:
        values = st.sampled_from(argument.choices)
    elif field.name in _JSON:
        values = st.sampled_from(_JSON[field.name])
    elif argument.parse is int:
        values = st.integers(min_value=0, max_value=10**12)
    elif argument.parse is float:
        values = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
    else:
        values = _WORD
    if optional and field.name in _RARE:
        return st.one_of(st.none(), st.none(), st.none(), values)
    return st.one_of(st.none(), values) if optional else values


@st.composite
def _specs(draw, spec_class):
    values = {field.name: draw(_values(field)) for field in dataclasses.fields(spec_class)}
    if spec_class.operation == "register":  # REGISTER's table is a name in a catalog
        values["table_path"] = draw(st.sampled_from(["uc://c.s.t", "glue://db.t", "hms://db.`a.b`"]))
    try:
        return spec_class(**values)
    except InvalidArgumentError:
        assume(False)


@pytest.mark.parametrize("spec_class", list(SPECS.values()), ids=lambda c: c.operation)
def test_a_spec_comes_back_equal_from_its_argv(spec_class):
    @settings(
        max_examples=15,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(_specs(spec_class))
    def round_trip(spec):
        assert parse_request(spec.to_argv()) == spec

    round_trip()
