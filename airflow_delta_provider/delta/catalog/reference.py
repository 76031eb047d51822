"""Table names in a catalog: ``uc://c.s.t``, ``glue://db.t``, ``hms://db.t``.

A table argument is either a storage location (a path or a ``file://``,
``s3://``, ``abfss://``, ``gs://`` URI) or a catalog reference, told apart by
the scheme alone. A reference names the catalog kind and the table's parts:

- ``uc://<catalog>.<schema>.<table>``: Unity Catalog (the form delta-rs uses);
- ``glue://<database>.<table>``: the AWS Glue Data Catalog;
- ``hms://<database>.<table>``: a Hive Metastore over Thrift.

A part may be quoted with backticks when it holds a dot (``uc://main.`a.b`.t``).
A malformed reference is an :class:`~..errors.InvalidArgumentError` naming the
expected form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.delta.expressions.quoting import quote_identifier

UNITY = "uc"
GLUE = "glue"
HIVE = "hms"

#: Each catalog kind: how many parts its names have, and their names (for messages).
FORMS: dict[str, tuple[str, ...]] = {
    UNITY: ("catalog", "schema", "table"),
    GLUE: ("database", "table"),
    HIVE: ("database", "table"),
}

_SCHEME_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.DOTALL)
#: One part: a plain name, or a backticked one (a doubled backtick is a backtick).
_PART_RE = re.compile(r"`((?:[^`]|``)+)`|([^.`]+)")


@dataclass(frozen=True)
class CatalogReference:
    """A table named in a catalog."""

    kind: str
    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        """The dotted full name (``main.sales.orders``), as the catalog spells it."""
        return ".".join(self.parts)

    @property
    def table(self) -> str:
        return self.parts[-1]

    @property
    def namespace(self) -> tuple[str, ...]:
        """The schema's full name (UC: catalog and schema) or the database."""
        return self.parts[:-1]

    def __str__(self) -> str:
        return f"{self.kind}://{'.'.join(_quote(p) for p in self.parts)}"


def is_catalog_reference(table: str) -> bool:
    """Whether ``table`` names a table in a catalog rather than a location."""
    match = _SCHEME_RE.match(str(table).strip())
    return match is not None and match["scheme"].lower() in FORMS


def parse_reference(table: str) -> CatalogReference | None:
    """The reference ``table`` holds; None for a storage location.

    InvalidArgumentError for a catalog scheme with a malformed name.
    """
    match = _SCHEME_RE.match(str(table).strip())
    if match is None or match["scheme"].lower() not in FORMS:
        return None
    kind = match["scheme"].lower()
    form = FORMS[kind]
    expected = f"{kind}://{'.'.join(f'<{p}>' for p in form)}"
    parts = _split(match["rest"])
    if parts is None or len(parts) != len(form):
        raise InvalidArgumentError(f"malformed catalog reference {table!r}: expected {expected}")
    return CatalogReference(kind, tuple(parts))


def _split(text: str) -> list[str] | None:
    parts: list[str] = []
    position = 0
    while True:
        match = _PART_RE.match(text, position)
        if match is None:
            return None
        quoted, plain = match.groups()
        part = quoted.replace("``", "`") if quoted is not None else plain
        if not part.strip() or (plain is not None and part != part.strip()) or "/" in part:
            return None
        parts.append(part)
        position = match.end()
        if position == len(text):
            return parts
        if text[position] != ".":
            return None
        position += 1


def _quote(part: str) -> str:
    """A name's part as the reference form writes it: backtick-quoted only when it must be."""
    return quote_identifier(part) if re.search(r"[.`\s]", part) else part


__all__ = ["FORMS", "GLUE", "HIVE", "UNITY", "CatalogReference", "is_catalog_reference", "parse_reference"]
