"""Unit tests for ``delta/storage/options.py``."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage.options import credential_env, is_secret_key, redacted, split_options


def test_options_are_sorted_into_config_client_and_retry():
    opts = split_options(
        {
            "AWS_ENDPOINT_URL": "http://x",
            "AWS_ALLOW_HTTP": "true",
            "timeout": "5s",
            "max_retries": "2",
            "retry_timeout": "30s",
            "delta_atomic_create": "probe",
            "ignored": None,
        }
    )
    assert opts.config == {"AWS_ENDPOINT_URL": "http://x"}
    assert opts.client == {"allow_http": True, "timeout": "5s"}
    assert opts.retry == {"max_retries": 2, "retry_timeout": dt.timedelta(seconds=30)}
    assert opts.atomic_create == "probe"
    assert opts.has_custom_endpoint


@pytest.mark.parametrize(
    "bad",
    [{"delta_atomic_create": "maybe"}, {"max_retries": "many"}, {"retry_timeout": "soon"}],
)
def test_bad_option_values_are_invalid_input(bad):
    with pytest.raises(InvalidInputError, match=next(iter(bad))):
        split_options(bad)


def test_atomic_create_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("DELTA_ATOMIC_CREATE", "trust")
    assert split_options({}).atomic_create == "trust"


def test_secrets_are_named_and_redacted():
    secret_names = ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
                    "AZURE_STORAGE_SAS_TOKEN", "GOOGLE_SERVICE_ACCOUNT_KEY", "password"]
    assert all(is_secret_key(n) for n in secret_names)
    assert not any(is_secret_key(n) for n in ["AWS_ACCESS_KEY_ID", "AWS_REGION", "AWS_ENDPOINT_URL"])
    assert redacted({"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_REGION": "eu"}) == {
        "AWS_SECRET_ACCESS_KEY": "***",
        "AWS_REGION": "eu",
    }


def test_credential_env_takes_only_store_variables():
    env = {"AWS_REGION": "eu", "AZURE_STORAGE_ACCOUNT_NAME": "a", "GOOGLE_SERVICE_ACCOUNT": "/k", "HOME": "/root"}
    assert credential_env(env) == {k: v for k, v in env.items() if k != "HOME"}
