"""delta/expressions/resolve.py: user SQL's columns checked against a schema with no Spark.

Conservative by design: everything here that is refused, Spark refuses too
(tests/spark/test_conditions.py runs the same inputs through Spark's analysis).
"""

from __future__ import annotations

import pytest

from airflow_delta_provider.delta.errors import SqlSyntaxError, UnresolvedColumnError
from airflow_delta_provider.delta.expressions.resolve import check_columns, set_targets, suggestions


def _schema(*names: str) -> dict:
    return {"type": "struct", "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in names]}


SCHEMA = _schema("id", "status", "updated_at", "Mixed Case", "we`ird", "a.b", "s", "Größe", "col-1a")

#: Valid SQL for Spark over SCHEMA (``s`` read as a struct, ``arr`` absent on purpose where noted).
VALID = [
    "STATUS = 'x' AND ID > 1",  # case-insensitive
    "`Mixed Case` > 0 AND `mixed case` < 9",  # quoted, spaces
    "`we``ird` = 1",  # a doubled backtick
    "`a.b` = 1",  # a dot inside one name
    "`col-1a` = 1 AND `Größe` > 0",  # a hyphen, unicode (Spark wants it quoted)
    "s.x.y = 1",  # a nested field needs only its column
    "transform(array(1, 2), x -> x + id)[0] > 0",  # a lambda's parameter is no column
    "aggregate(array(1), 0, (acc, x) -> acc + x) > id",
    "updated_at > current_date - interval 1 day AND updated_at < current_timestamp",  # functions without ()
    "user = 'me' OR current_user() = 'me'",
    "_metadata.file_path LIKE '%.parquet'",  # the hidden file metadata column
    "timestampadd(HOUR, 1, updated_at) > now() AND extract(YEAR FROM updated_at) = 2024",  # units, not columns
    "s:a::int = 1",  # Spark 4 syntax sqlglot cannot read: left to Spark
    "id::int = 1 AND id == 1 AND id <=> 1 AND status RLIKE 'a' AND id IN (1, 2) AND id BETWEEN 1 AND 2",
]


@pytest.mark.parametrize("sql", VALID)
def test_tricky_valid_sql_passes(sql: str) -> None:
    check_columns(sql, "condition", SCHEMA)


def test_an_unknown_column_is_sparks_error_with_its_suggestions() -> None:
    with pytest.raises(UnresolvedColumnError) as caught:
        check_columns("statuss = 'x'", "condition", _schema("id", "status", "updated_at", "Mixed Case"))
    # Spark 4.2's own text for this schema (its order: edit distance, then name).
    assert str(caught.value) == (
        "invalid condition \"statuss = 'x'\": [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function "
        "parameter with name `statuss` cannot be resolved. Did you mean one of the following? "
        "[`status`, `id`, `updated_at`, `Mixed Case`]."
    )


def test_suggestions_are_the_five_nearest_in_sparks_order() -> None:
    assert suggestions("zz", [f"`c{i}x`" for i in range(8, -1, -1)]) == ["`c0x`", "`c1x`", "`c2x`", "`c3x`", "`c4x`"]
    assert suggestions("a", ["`id`", "`status`", "`updated_at`", "`Mixed Case`"]) == [
        "`id`",
        "`status`",
        "`Mixed Case`",
        "`updated_at`",
    ]


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("`Mixed  Case` = 1", "`Mixed  Case`"),
        ("`current_date` = 1", "`current_date`"),  # quoted: a column, not the function
        ("t.id = 1", "`t`.`id`"),  # no table alias in UPDATE's or DELETE's condition
        ("transform(array(1), x -> x + idd)[0] > 0", "`idd`"),
        ("upper(nope) = 'A'", "`nope`"),
    ],
)
def test_unknown_columns_are_refused(sql: str, name: str) -> None:
    with pytest.raises(UnresolvedColumnError, match=f"with name {name} cannot be resolved"):
        check_columns(sql, "condition", SCHEMA)


@pytest.mark.parametrize(
    ("sql", "near"),
    [
        ("a AND AND b", "'AND' (line 1, pos 6)"),  # the second AND, where Spark points at a later token
        ("id = 1 AND AND id = 2", "'AND' (line 1, pos 11)"),
        ("id IN (1, 2", "end of input (line 1, pos 11)"),
        ("(id = 1", "end of input (line 1, pos 7)"),
        ("id =", "end of input (line 1, pos 4)"),
    ],
)
def test_a_syntax_error_names_the_token_at_fault(sql: str, near: str) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        check_columns(sql, "condition", SCHEMA)
    assert str(caught.value) == f"invalid condition {sql!r}: [PARSE_SYNTAX_ERROR] Syntax error at or near {near}"


@pytest.mark.parametrize("sql", ["", "  ", "SELECT 1", "id = 1; DROP TABLE t"])
def test_empty_text_and_statements_are_refused(sql: str) -> None:
    with pytest.raises(SqlSyntaxError):
        check_columns(sql, "condition", SCHEMA)


def test_with_a_qualifier_only_its_references_are_checked() -> None:
    # MERGE's on: s.* and unqualified names may be the source's.
    check_columns("t.id = s.anything AND unqualified = 1 AND T.`Mixed Case` = s.x", "on", SCHEMA, qualifier="t")
    with pytest.raises(UnresolvedColumnError) as caught:
        check_columns("t.idd = s.id", "on", _schema("id", "status"), qualifier="t")
    assert "with name `t`.`idd` cannot be resolved. Did you mean one of the following? [`t`.`id`, `t`.`status`]" in str(
        caught.value
    )


def test_set_targets_resolve_once_each_quoted_or_not() -> None:
    assert [f["name"] for f in set_targets(SCHEMA, ["ID", "`Mixed Case`", "we`ird"])] == ["id", "Mixed Case", "we`ird"]
    with pytest.raises(UnresolvedColumnError, match=r"cannot SET unknown column 'statu': .*\[`status`, `a.b`, `s`"):
        set_targets(SCHEMA, ["statu"])
    with pytest.raises(Exception, match="is SET more than once"):
        set_targets(SCHEMA, ["id", "ID"])
