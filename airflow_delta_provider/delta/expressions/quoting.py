"""The one quoting function for every identifier the code puts into SQL.

Column, partition, alias and table names reach Spark SQL text (``expr``,
``selectExpr``, ``sql``, ``filter``/``where`` strings), the column names
``F.col`` and ``DataFrame.hint`` parse (a hint's string parameters are read
as multi-part attribute names: ``a.b`` is two parts, ``col-1a`` does not
parse), partition predicates, generated-column and CHECK expressions we
rewrite, MERGE's clauses, CDF queries and lineage. Names come from users and
from other engines: spaces, dots, hyphens (delta-spark's physical names are
``col-<uuid>``), backticks, unicode, reserved words. Each one goes through
:func:`quote_identifier`, and ``tests/test_sql_quoting.py`` fails on SQL
built from an identifier without it.

This module imports nothing, so the core and the Spark engine both use it.
"""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """``name`` as one backtick-quoted SQL identifier, a backtick inside doubled.

    ``quote_identifier("a.b")`` is ```a.b``` (one name, not ``a`` then ``b``);
    ``quote_identifier("we`ird")`` is ```we``ird```. A qualified reference is
    its quoted parts joined by dots: ``f"{quote_identifier(alias)}.{quote_identifier(name)}"``.
    """
    return "`" + name.replace("`", "``") + "`"


def unquote_identifier(text: str) -> str:
    """The name a user wrote, backtick-quoted or not: ```a b``` and ``a b``
    are both ``a b``, ```we``ird``` is ``we`ird`` (surrounding blanks dropped)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1].replace("``", ""):
        return text[1:-1].replace("``", "`")
    return text


def split_identifier(text: str) -> list[str]:
    """The names of a dotted reference, each part backtick-quoted or not:
    ```a`.`b.c`.d`` is ``["a", "b.c", "d"]`` (a doubled backtick inside quotes is one)."""
    names: list[str] = []
    part: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "`" and quoted and text[i + 1 : i + 2] == "`":
            part.append("`")
            i += 2
            continue
        if char == "`":
            quoted = not quoted
        elif char == "." and not quoted:
            names.append("".join(part))
            part = []
        else:
            part.append(char)
        i += 1
    names.append("".join(part))
    return names


__all__ = ["quote_identifier", "split_identifier", "unquote_identifier"]
