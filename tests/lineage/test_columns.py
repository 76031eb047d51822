"""Column lineage of UPDATE, DELETE and REORG, from their SQL."""

from __future__ import annotations

from airflow_delta_provider.lineage.columns import (
    CONDITIONAL,
    DIRECT,
    FILTER,
    IDENTITY,
    INDIRECT,
    TRANSFORMATION,
    ColumnLineage,
    Edge,
    Rewrite,
    referenced_columns,
    rewrite_lineage,
)

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "Amount", "type": "long", "nullable": True, "metadata": {}},
        {"name": "status", "type": "string", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {"type": "struct", "fields": [{"name": "c", "type": "long", "nullable": True, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
    ],
}


def _copied(*columns: str) -> dict[str, tuple[Edge, ...]]:
    return {c: (Edge(c, DIRECT, IDENTITY),) for c in columns}


def test_update_set_from_an_expression_under_a_condition() -> None:
    lineage = rewrite_lineage(
        SCHEMA, Rewrite(assignments={"status": "concat(status, s.c, amount)"}, condition="id > 3")
    )
    assert lineage.fields == {
        **_copied("id", "Amount", "s"),
        "status": (
            Edge("Amount", DIRECT, TRANSFORMATION),  # column names resolve case-insensitively
            Edge("status", DIRECT, TRANSFORMATION),
            Edge("s", DIRECT, TRANSFORMATION),  # a struct field reads its column
            Edge("status", DIRECT, IDENTITY),  # rows that do not match keep their value
            Edge("id", INDIRECT, CONDITIONAL),
        ),
    }
    assert lineage.dataset == ()


def test_update_without_condition_takes_only_the_expression() -> None:
    lineage = rewrite_lineage(SCHEMA, Rewrite(assignments={"AMOUNT": "id", "status": "'late'"}))
    assert lineage.fields["Amount"] == (Edge("id", DIRECT, IDENTITY),)  # a bare column is copied
    assert lineage.fields["status"] == ()  # a literal reads no column


def test_an_expression_sqlglot_cannot_read_leaves_its_column_out() -> None:
    lineage = rewrite_lineage(SCHEMA, Rewrite(assignments={"status": "concat(status,"}, condition="id > 3"))
    assert "status" not in lineage.fields
    assert lineage.fields["id"] == (Edge("id", DIRECT, IDENTITY),)
    unreadable_condition = rewrite_lineage(SCHEMA, Rewrite(assignments={"status": "'x'"}, condition="id >"))
    assert "status" not in unreadable_condition.fields


def test_delete_copies_every_column_and_filters_the_table() -> None:
    lineage = rewrite_lineage(SCHEMA, Rewrite(condition="status = 'cancelled' OR s.c IS NULL", deletes=True))
    assert lineage == ColumnLineage(
        _copied("id", "Amount", "status", "s"), (Edge("status", INDIRECT, FILTER), Edge("s", INDIRECT, FILTER))
    )


def test_reorg_copies_every_column() -> None:
    assert rewrite_lineage(SCHEMA, Rewrite()) == ColumnLineage(_copied("id", "Amount", "status", "s"))


def test_referenced_columns_ignore_lambda_variables_and_unknown_names() -> None:
    assert referenced_columns("transform(tags, x -> x + id) > nope", ["id", "tags"]) == ["id", "tags"]
    assert referenced_columns("id >", ["id"]) is None
