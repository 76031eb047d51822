"""The operators' argument lists in the docs agree with the operators.

The docs describe arguments in definition lists whose terms are argument
names, ending in ``(templated)`` when the operator renders them:

    ``txn_app_id``, ``txn_version`` (templated)
        The protocol's idempotent-write marker...

Each list below belongs to one operator: a section of docs/operators.rst
titled with its class name (and "Arguments shared by all operators" for the
base class), or the page of one operator. For each, the terms must name
every argument of the operator's ``__init__`` (beyond the base class's), no
argument it does not have, and say ``(templated)`` exactly for its
``template_fields``.

The URI schemes that docs/operators.rst (``table_path``) and
docs/object-storage.rst name are the ones the storage layer accepts.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import argument_of
from airflow_delta_provider.operators import delta as operators
from airflow_delta_provider.operators import table_info

DOCS = Path(__file__).resolve().parents[2] / "docs"
_TERM = re.compile(r"^((?:``\w+``(?:, )?)+)( \(templated\))?$")
_TITLE = re.compile(r"^[=\-~]{3,}$")


def sections(path: Path) -> dict[str, list[str]]:
    """Section title -> its lines, for one rst page."""
    lines = path.read_text().splitlines()
    out: dict[str, list[str]] = {}
    title = path.stem
    for index, line in enumerate(lines):
        if index + 1 < len(lines) and _TITLE.match(lines[index + 1]) and line.strip():
            title = line.strip()
            continue
        out.setdefault(title, []).append(line)
    return out


def documented(lines: list[str]) -> dict[str, bool]:
    """Argument name -> whether its term says ``(templated)``."""
    out = {}
    for line in lines:
        match = _TERM.match(line)
        if match:
            for name in re.findall(r"``(\w+)``", match.group(1)):
                out[name] = match.group(2) is not None
    return out


#: The bases whose arguments are listed once, for all their operators.
BASES = (operators.DeltaSparkOperator, table_info.DeltaTableInfoOperator)


def _base(cls: type) -> type | None:
    return next((base for base in BASES if cls is not base and issubclass(cls, base)), None)


def _shared_spec_fields(templated_only: bool = False) -> set[str]:
    """The fields every spec has that the operators take: listed with the base class's arguments."""
    return {
        field.name
        for field in dataclasses.fields(OperationSpec)
        if argument_of(field).in_operator and (argument_of(field).templated or not templated_only)
    }


def own_arguments(cls: type) -> set[str]:
    names = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    if cls is operators.DeltaSparkOperator:
        return names | _shared_spec_fields()
    base = _base(cls)
    return names - own_arguments(base) if base is not None else names


def own_template_fields(cls: type) -> set[str]:
    if cls is operators.DeltaSparkOperator:
        return set(cls.template_fields) | _shared_spec_fields(templated_only=True)
    base = _base(cls)
    return set(cls.template_fields) - (own_template_fields(base) if base is not None else set())


OPERATORS_PAGE = sections(DOCS / "operators.rst")
#: (operator, the lines that describe its arguments)
ARGUMENT_LISTS = [
    (operators.DeltaSparkOperator, OPERATORS_PAGE["Arguments shared by all operators"]),
    *[
        (getattr(operators, title), lines)
        for title, lines in OPERATORS_PAGE.items()
        if title.startswith("Delta") and title.endswith("Operator")
    ],
    (operators.DeltaMergeOperator, sections(DOCS / "merge.rst")["Arguments"]),
    (operators.DeltaOptimizeOperator, (DOCS / "optimize.rst").read_text().splitlines()),
    (operators.DeltaRestoreOperator, (DOCS / "restore.rst").read_text().splitlines()),
    (operators.DeltaConvertOperator, sections(DOCS / "convert.rst")["Arguments"]),
    (operators.DeltaGenerateManifestOperator, sections(DOCS / "manifests.rst")["Arguments"]),
    (operators.DeltaCloneOperator, sections(DOCS / "clone.rst")["Arguments"]),
    *[
        (getattr(table_info, title), lines)
        for title, lines in sections(DOCS / "table-information.rst").items()
        if title.startswith("Delta") and title.endswith("Operator")
    ],
    (table_info.DeltaTableInfoOperator, sections(DOCS / "table-information.rst")["Arguments"]),
]


def test_every_operator_has_its_argument_list() -> None:
    described = {cls for cls, _ in ARGUMENT_LISTS}
    every = {
        cls
        for module in (operators, table_info)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, BASES)
    }
    # DeltaChangesOperator's arguments are described in the prose of docs/change-data-feed.rst.
    assert every - described == {operators.DeltaChangesOperator}


@pytest.mark.parametrize("cls, lines", [pytest.param(c, lines, id=c.__name__) for c, lines in ARGUMENT_LISTS])
def test_the_argument_list_names_each_argument_and_what_is_templated(cls: type, lines: list[str]) -> None:
    terms = documented(lines)
    assert set(terms) == own_arguments(cls)
    assert {name for name, templated in terms.items() if templated} == own_template_fields(cls)


@pytest.mark.parametrize("page", ["operators.rst", "object-storage.rst"])
def test_the_table_path_schemes_are_those_the_storage_layer_accepts(page: str) -> None:
    from airflow_delta_provider.delta.storage.location import SCHEMES

    text = (DOCS / page).read_text()
    if page == "operators.rst":
        lines = sections(DOCS / page)["Arguments shared by all operators"]
        text = "\n".join(lines[: next(i for i, line in enumerate(lines) if line.startswith("``conn_id``"))])
    assert set(re.findall(r"``(\w+)://", text)) == set(SCHEMES)
