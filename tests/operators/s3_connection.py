"""An Airflow ``aws`` connection to a moto bucket, for operators' ``storage_conn_id``."""

from __future__ import annotations

import json
import os

import pytest

CONN_ID = "lake_s3"


@pytest.fixture
def s3_connection(s3_bucket, monkeypatch):
    """An ``aws`` connection to the bucket; the environment holds no AWS_* variable."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    extra = {"endpoint_url": s3_bucket.endpoint, "region_name": "us-east-1"}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}",
        json.dumps(
            {
                "conn_type": "aws",
                "login": s3_bucket.storage_options["AWS_ACCESS_KEY_ID"],
                "password": s3_bucket.secret,
                "extra": extra,
            }
        ),
    )
    return s3_bucket
