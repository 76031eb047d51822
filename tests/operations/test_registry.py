"""Request dataclasses (requests/operations.py): what only they decide."""

from __future__ import annotations


def test_alter_needs_spark_for_the_drops_that_rewrite_files() -> None:
    """The request's list of rewriting drops is the core's (the request may not import it)."""
    from airflow_delta_provider.operations.alter.drop_feature import PREPARE_WITH_REWRITE
    from airflow_delta_provider.operations.alter.spec import REWRITING_DROPS, AlterSpec

    assert set(REWRITING_DROPS) == set(PREPARE_WITH_REWRITE)

    def needs(change: str) -> bool:
        return AlterSpec(table="/t", change=change).needs_spark()

    assert needs('{"drop_feature": {"name": "deletionVectors"}}')
    assert needs('{"drop_feature": {"name": "typeWidening", "truncate_history": true}}')
    assert not needs('{"drop_feature": {"name": "inCommitTimestamp"}}')
    assert needs('{"add_constraint": {"name": "p", "expression": "a > 0"}}')


def test_alter_drop_feature_is_the_drop_feature_change_in_short() -> None:
    import pytest

    from airflow_delta_provider.operations.alter.spec import AlterSpec

    assert AlterSpec(table="/t", drop_feature="deletionVectors").needs_spark()
    assert not AlterSpec(table="/t", drop_feature="inCommitTimestamp").needs_spark()
    request = AlterSpec(table="/t", drop_feature="v2Checkpoint", truncate_history=True)
    assert request.operation_arguments() == ["--drop-feature", "v2Checkpoint", "--truncate-history"]
    for wrong in ({}, {"change": "{}", "drop_feature": "x"}):
        with pytest.raises(ValueError, match="exactly one of change, drop_feature"):
            AlterSpec(table="/t", **wrong)
    with pytest.raises(ValueError, match="truncate_history goes with drop_feature"):
        AlterSpec(table="/t", change="{}", truncate_history=True)
