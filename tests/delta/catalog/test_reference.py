"""Catalog references: ``uc://c.s.t``, ``glue://db.t``, ``hms://db.t``, and what is malformed."""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.catalog.reference import CatalogReference, is_catalog_reference, parse_reference
from airflow_delta_provider.delta.errors import InvalidArgumentError


@pytest.mark.parametrize(
    ("text", "kind", "parts"),
    [
        ("uc://main.sales.orders", "uc", ("main", "sales", "orders")),
        ("UC://main.sales.orders", "uc", ("main", "sales", "orders")),
        ("glue://db.t", "glue", ("db", "t")),
        ("hms://db.t", "hms", ("db", "t")),
        ("uc://main.`a.b`.t", "uc", ("main", "a.b", "t")),
        ("hms://db.`we``ird`", "hms", ("db", "we`ird")),
    ],
)
def test_references(text: str, kind: str, parts: tuple[str, ...]) -> None:
    ref = parse_reference(text)
    assert ref == CatalogReference(kind, parts)
    assert parse_reference(str(ref)) == ref  # str() quotes what needs it
    assert is_catalog_reference(text)


@pytest.mark.parametrize("path", ["/tmp/t", "s3://bucket/t", "file:///x", "abfss://c@a.dfs.core.windows.net/t", "t"])
def test_locations_are_not_references(path: str) -> None:
    assert parse_reference(path) is None
    assert not is_catalog_reference(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("uc://a.b", "uc://<catalog>.<schema>.<table>"),
        ("uc://a.b.c.d", "uc://<catalog>.<schema>.<table>"),
        ("uc://a..c", "uc://<catalog>.<schema>.<table>"),
        ("uc://a.b.c/d", "uc://<catalog>.<schema>.<table>"),
        ("uc://", "uc://<catalog>.<schema>.<table>"),
        ("glue://t", "glue://<database>.<table>"),
        ("hms://db.t.", "hms://<database>.<table>"),
        ("hms://db.` `", "hms://<database>.<table>"),
        ("glue://db. t", "glue://<database>.<table>"),
    ],
)
def test_malformed_references_name_the_form(text: str, expected: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"malformed catalog reference .*expected {expected}"):
        parse_reference(text)
