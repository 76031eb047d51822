from __future__ import annotations

from airflow_delta_provider.spark.session import REQUIRED_CONF, get_or_create_session


def test_session_has_the_settings_delta_files_need(spark):
    for key, value in REQUIRED_CONF.items():
        if not key.startswith("spark.hadoop."):
            assert spark.conf.get(key) == value


def test_get_or_create_returns_the_running_session_and_reapplies_required_conf(spark):
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    again = get_or_create_session(conf={"spark.sql.shuffle.partitions": "2"})
    assert again is spark or again.sparkContext is spark.sparkContext
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_ui_is_off_unless_configured(spark):
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
