"""Where each catalog is and how to authenticate: from the environment or an Airflow connection.

- Unity Catalog: ``UNITY_CATALOG_URL`` and ``UNITY_CATALOG_TOKEN``;
- AWS Glue: the standard AWS chain (``AWS_*``, profiles, instance roles) and
  ``AWS_ENDPOINT_URL``, as boto3 reads them;
- the Hive Metastore: ``HIVE_METASTORE_URI`` (``thrift://host:9083``).

The Airflow layer builds the same settings from ``catalog_conn_id``
(``airflow_delta_provider/hooks/catalog_connection.py``). The token is a secret:
it is left out of ``repr`` and travels only by environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

UNITY_URL_ENV = "UNITY_CATALOG_URL"
UNITY_TOKEN_ENV = "UNITY_CATALOG_TOKEN"
HIVE_URI_ENV = "HIVE_METASTORE_URI"
#: The catalog name of the table a Spark application is given by its location (a hook resolved
#: it), so that the application renews the credentials vended with it (:func:`unity_renewal_env`).
RENEWS_ENV = "DELTA_CATALOG_RENEWS"


@dataclass(frozen=True)
class CatalogSettings:
    """How to reach the catalogs; what is None is not configured."""

    unity_url: str | None = None
    unity_token: str | None = field(default=None, repr=False)
    #: boto3 session and client arguments for Glue (``region_name``, ``endpoint_url``, keys); empty: the AWS chain.
    aws: Mapping[str, str] = field(default_factory=dict, repr=False)
    hive_uri: str | None = None
    #: Seconds a catalog call may take.
    timeout: float = 10.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CatalogSettings:
        env = os.environ if environ is None else environ
        return cls(
            unity_url=env.get(UNITY_URL_ENV) or None,
            unity_token=env.get(UNITY_TOKEN_ENV) or None,
            hive_uri=env.get(HIVE_URI_ENV) or None,
        )

    def as_env(self) -> dict[str, str]:
        """These settings as the environment variables :meth:`from_env` reads (the Glue ones are
        the AWS chain's own), for a process that resolves names itself."""
        out = {UNITY_URL_ENV: self.unity_url, UNITY_TOKEN_ENV: self.unity_token, HIVE_URI_ENV: self.hive_uri}
        aws_env = {
            "aws_access_key_id": "AWS_ACCESS_KEY_ID",
            "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
            "aws_session_token": "AWS_SESSION_TOKEN",
            "region_name": "AWS_DEFAULT_REGION",
            "endpoint_url": "AWS_ENDPOINT_URL_GLUE",
        }
        out.update({aws_env[k]: v for k, v in self.aws.items() if k in aws_env})
        return {k: v for k, v in out.items() if v}


def unity_renewal_env(settings: CatalogSettings, name: str) -> dict[str, str]:
    """What a Spark application given a Unity Catalog table's location and vended credentials
    needs to renew them itself: the name (:data:`RENEWS_ENV`) and the server's URL and token."""
    return {RENEWS_ENV: name, **{k: v for k, v in settings.as_env().items() if k in (UNITY_URL_ENV, UNITY_TOKEN_ENV)}}


__all__ = ["HIVE_URI_ENV", "RENEWS_ENV", "UNITY_TOKEN_ENV", "UNITY_URL_ENV", "CatalogSettings", "unity_renewal_env"]
