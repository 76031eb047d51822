"""Every Delta operator is generated from its operation's spec (issue 38).

Its keyword arguments, its ``template_fields`` (and their renderers) and the
Spark CLI's flags all come from the spec's fields; no operator class declares
a spec field itself, and from an operator the code that runs it is two
steps away: the operator names its spec, the registry names the runner.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap

import pytest

from airflow_delta_provider.operations.registry import SPECS
from airflow_delta_provider.operations.runners import runner_for
from airflow_delta_provider.operations.spec.fields import POSITIONAL, argument_of
from airflow_delta_provider.operators import delta as operators
from airflow_delta_provider.spark.cli import build_parser

OPERATORS = sorted(
    (cls for cls in vars(operators).values() if isinstance(cls, type) and issubclass(cls, operators.DeltaSparkOperator)
     and "spec_class" in cls.__dict__),
    key=lambda cls: cls.__name__,
)  # fmt: skip
BASE = operators.DeltaSparkOperator


def _own_arguments(operator_class) -> set[str]:
    """The keyword arguments the class's own ``__init__`` spells (not its generated signature)."""
    code = inspect.unwrap(operator_class.__dict__["__init__"]).__code__
    return set(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])


def _operator_fields(spec_class):
    return {f.name: argument_of(f) for f in dataclasses.fields(spec_class) if argument_of(f).in_operator}


def test_every_operation_has_exactly_one_operator():
    assert sorted(cls.spec_class.operation for cls in OPERATORS) == sorted(SPECS)


@pytest.mark.parametrize("operator_class", OPERATORS, ids=lambda c: c.__name__)
def test_the_arguments_are_the_specs_fields(operator_class):
    parameters = inspect.signature(operator_class.__init__).parameters
    fields = _operator_fields(operator_class.spec_class)
    own = _own_arguments(operator_class)
    base = set(inspect.signature(BASE.__init__).parameters) - {"self", "kwargs"}
    assert set(parameters) - {"self", "kwargs"} == set(fields) | base | own
    assert not (own & set(fields)), "an operator re-declares a spec field"
    for name in fields:
        field = operator_class.spec_class.__dataclass_fields__[name]
        required = field.default is dataclasses.MISSING and name not in operator_class.optional_fields
        assert (parameters[name].default is inspect.Parameter.empty) == required, name


@pytest.mark.parametrize("operator_class", OPERATORS, ids=lambda c: c.__name__)
def test_no_operator_class_declares_a_spec_field(operator_class):
    fields = set(_operator_fields(operator_class.spec_class))
    assert not (fields & set(operator_class.__dict__)), "a spec field as a class attribute"
    source = textwrap.dedent(inspect.getsource(operator_class))
    assigned = {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name) and node.value.id == "self"
    }  # fmt: skip
    assert not (assigned & fields), f"{operator_class.__name__} assigns spec fields: {assigned & fields}"
    for name in ("template_fields", "template_fields_renderers"):
        assert name not in operator_class.__dict__ or name in {"template_fields", "template_fields_renderers"}


@pytest.mark.parametrize("operator_class", OPERATORS, ids=lambda c: c.__name__)
def test_template_fields_and_renderers_come_from_the_spec(operator_class):
    fields = _operator_fields(operator_class.spec_class)
    templated = {name for name, argument in fields.items() if argument.templated}
    own = set(operator_class.__dict__.get("own_template_fields", ()))
    assert set(operator_class.template_fields) == templated | set(BASE.template_fields) | own
    renderers = {name: argument.renderer for name, argument in fields.items() if argument.renderer}
    assert operator_class.template_fields_renderers == {**BASE.template_fields_renderers, **renderers}


@pytest.mark.parametrize("spec_class", list(SPECS.values()), ids=lambda c: c.operation)
def test_the_cli_flags_are_the_specs_fields(spec_class):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[spec_class.operation]
    flags = {flag for action in sub._actions for flag in action.option_strings} - {"-h", "--help"}
    expected = set()
    for field in dataclasses.fields(spec_class):
        argument = argument_of(field)
        if argument.kind != POSITIONAL:
            expected |= {argument.flag_for(field.name), *(alias for alias, _ in argument.aliases)}
    assert flags == expected


@pytest.mark.parametrize("operator_class", OPERATORS, ids=lambda c: c.__name__)
def test_the_runner_is_two_steps_from_the_operator(operator_class):
    """The operator names its spec; the registry names the runner, in the operation's own folder."""
    runner = runner_for(operator_class.spec_class)
    module = getattr(runner, "__module__", None) or type(runner).__module__
    if module.endswith("runners.python"):  # TRANSITIONAL keyword adaptor, until every runner takes its spec
        module = runner.function.__module__
    folder = operator_class.spec_class.__module__.rsplit(".", 1)[0]
    assert module.startswith(folder + "."), (module, folder)
