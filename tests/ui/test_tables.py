"""Which tables the Delta pages list, the connection that reads each, and who may see each."""

from __future__ import annotations

import tests.airflow_env  # noqa: F401  (AIRFLOW_HOME before airflow loads)
from airflow_delta_provider.assets.uri import table_asset_uri
from airflow_delta_provider.ui.tables import build_known_tables
from airflow_delta_provider.utils.ui_paths import table_id


def test_every_spelling_of_a_table_is_one_entry_with_every_dag_that_wrote_it():
    tables = build_known_tables(
        [("/data/orders", "etl"), ("file:///data/orders", "repair"), ("s3a://lake/t", "ingest")], {}
    )
    assert {t.uri: t.dag_ids for t in tables.values()} == {
        "file:///data/orders": {"etl", "repair"},
        "s3://lake/t": {"ingest"},
    }
    assert set(tables) == {table_id("file:///data/orders"), table_id("s3://lake/t")}


def test_a_user_sees_only_the_tables_of_dags_they_may_read():
    settings = {"tables": ["s3://lake/open", {"uri": "s3://lake/team", "dag_ids": ["team_dag"]}]}
    tables = build_known_tables([("/data/orders", "etl"), ("/data/secret", "hidden")], settings)
    visible = {t.uri for t in tables.values() if t.visible_to({"etl"})}
    assert visible == {"file:///data/orders", "s3://lake/open"}
    assert {t.uri for t in tables.values() if t.visible_to({"team_dag"})} == {"s3://lake/open", "s3://lake/team"}
    assert {t.uri for t in tables.values() if t.visible_to(set())} == {"s3://lake/open"}


def test_the_connection_is_the_entry_s_or_the_longest_prefix_s():
    settings = {
        "tables": [{"uri": "s3://lake/raw/a", "conn_id": "own"}],
        "connections": {"s3://lake/": "lake", "s3://lake/raw/": "raw"},
    }
    tables = build_known_tables([("s3://lake/raw/b", "d"), ("s3://lake/c", "d"), ("gs://other/t", "d")], settings)
    conn = {t.uri: t.conn_id for t in tables.values()}
    assert conn == {"s3://lake/raw/a": "own", "s3://lake/raw/b": "raw", "s3://lake/c": "lake", "gs://other/t": None}
    assert table_asset_uri("s3a://lake/c") == "s3://lake/c"
