"""Storage options: how a table's store is configured and authenticated.

By default each cloud's own chain is used, as obstore (the Rust
``object_store``) reads it: for S3 ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``,
``AWS_ENDPOINT_URL`` and ``AWS_ALLOW_HTTP``, then the instance or web-identity
credentials; for Azure the ``AZURE_*`` variables; for GCS the ``GOOGLE_*``
variables and the metadata server. Explicit ``storage_options`` (delta-rs's
flat string form, any case: ``{"AWS_ENDPOINT_URL": "...", "timeout": "30s"}``)
win over the environment.

A few keys are the provider's own and never reach obstore:

``delta_atomic_create``
    ``auto`` (default), ``probe`` or ``trust``. A commit needs an atomic
    create (PROTOCOL.md "Creation of New Log Entries"). AWS S3, Azure and GCS
    honour one; some S3-compatible servers ignore ``If-None-Match``. With
    ``auto`` a store with a custom S3 endpoint is probed once per process
    before its first commit, ``probe`` probes any object store, ``trust``
    skips the probe. A store that fails the probe gets no commit.
``max_retries``, ``retry_timeout``, ``retry_init_backoff``, ``retry_max_backoff``, ``retry_backoff_base``
    obstore's request retries (default 10 retries within 180 s, backing off
    from 100 ms, doubling, to at most 15 s), which also bound the retries
    :mod:`.retry` adds. Each may come from the environment too, as
    ``DELTA_STORE_MAX_RETRIES`` and so on (the form an Airflow connection's
    extras reach a Spark application in); explicit options win.

Secrets never leave this module in a message: :func:`redacted` is what
``repr`` and errors show.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError

#: Environment variable prefixes that carry store configuration and credentials.
CREDENTIAL_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "DELTA_STORE_")
#: The prefix of the retry settings' environment variables (``DELTA_STORE_MAX_RETRIES``).
RETRY_ENV_PREFIX = "DELTA_STORE_"
#: The retry settings, as storage options (and, upper-cased after the prefix, variables).
RETRY_KEYS = ("max_retries", "retry_timeout", "retry_init_backoff", "retry_max_backoff", "retry_backoff_base")

ATOMIC_CREATE_MODES = ("auto", "probe", "trust")

#: obstore ``client_options`` keys (the rest of a store's keys are its ``config``).
_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "timeout",
        "user_agent",
    }
)
_BOOL_CLIENT_KEYS = frozenset(
    {"allow_http", "allow_invalid_certificates", "http1_only", "http2_only", "http2_keep_alive_while_idle"}
)
_OWN_KEYS = frozenset({"delta_atomic_create", *RETRY_KEYS})
_SECRET_RE = re.compile(r"secret|password|token|key|sas|credential", re.IGNORECASE)
_KEY_ID_RE = re.compile(r"access_key_id$", re.IGNORECASE)


@dataclass(frozen=True)
class StoreOptions:
    """Explicit options, sorted into where obstore takes them."""

    config: dict[str, str] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)
    atomic_create: str = "auto"

    @property
    def has_custom_endpoint(self) -> bool:
        return any(_strip_cloud_prefix(k.lower()) in ("endpoint", "endpoint_url") for k in self.config) or bool(
            os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")
        )


def split_options(options: Mapping[str, Any] | None) -> StoreOptions:
    """Sort ``storage_options`` into obstore's config, client and retry settings."""
    config: dict[str, str] = {}
    client: dict[str, Any] = {}
    retry: dict[str, Any] = {}
    atomic = os.environ.get("DELTA_ATOMIC_CREATE", "auto")
    from_env = {k: v for k, v in os.environ.items() if k.startswith(RETRY_ENV_PREFIX)}
    for key, value in {**from_env, **(options or {})}.items():
        if value is None:
            continue
        low = str(key).lower()
        bare = _strip_cloud_prefix(low)
        if low in _OWN_KEYS or bare in _OWN_KEYS:
            name = bare if bare in _OWN_KEYS else low
            if name == "delta_atomic_create":
                atomic = str(value).lower()
            else:
                _retry_option(retry, name, key, value)
        elif bare in _CLIENT_KEYS:
            client[bare] = _bool(value) if bare in _BOOL_CLIENT_KEYS else str(value)
        else:
            config[str(key)] = str(value)
    if atomic not in ATOMIC_CREATE_MODES:
        raise InvalidInputError(f"delta_atomic_create must be one of {', '.join(ATOMIC_CREATE_MODES)}; got {atomic!r}")
    return StoreOptions(config, client, retry, atomic)


def _retry_option(retry: dict[str, Any], name: str, key: str, value: Any) -> None:
    """Put one retry setting where obstore's ``retry_config`` takes it."""
    if name == "max_retries":
        retry["max_retries"] = _int_option(key, value)
    elif name == "retry_timeout":
        retry["retry_timeout"] = dt.timedelta(seconds=_seconds_option(key, value))
    elif name == "retry_backoff_base":
        try:
            retry.setdefault("backoff", {})["base"] = float(value)
        except (TypeError, ValueError):
            raise InvalidInputError(f"storage option {key!r} must be a number, got {value!r}") from None
    else:  # retry_init_backoff, retry_max_backoff
        retry.setdefault("backoff", {})[name.removeprefix("retry_")] = dt.timedelta(seconds=_seconds_option(key, value))


def credential_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The store variables of an environment (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``)."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if k.startswith(CREDENTIAL_ENV_PREFIXES)}


def is_secret_key(key: str) -> bool:
    """Whether an option or variable name carries a secret (a key, token, password)."""
    return bool(_SECRET_RE.search(key)) and not _KEY_ID_RE.search(key)


def redacted(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with every secret value replaced by ``***``."""
    return {k: ("***" if is_secret_key(str(k)) else v) for k, v in (options or {}).items()}


def _strip_cloud_prefix(key: str) -> str:
    for prefix in ("aws_", "azure_", "google_", RETRY_ENV_PREFIX.lower()):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _int_option(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"storage option {key!r} must be a whole number, got {value!r}") from None


def _seconds_option(key: str, value: Any) -> float:
    text = str(value).strip().lower()
    scale = 1.0
    for suffix, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            text, scale = text[: -len(suffix)], factor
            break
    try:
        return float(text) * scale
    except ValueError:
        raise InvalidInputError(f"storage option {key!r} must be a duration like 30s, got {value!r}") from None


__all__ = [
    "ATOMIC_CREATE_MODES",
    "CREDENTIAL_ENV_PREFIXES",
    "RETRY_ENV_PREFIX",
    "RETRY_KEYS",
    "StoreOptions",
    "credential_env",
    "is_secret_key",
    "redacted",
    "split_options",
]
