"""Credentials renewed before expiry by every store of a leased table (Azurite, real SAS expiry).

The process has no account key: a store opened with a SAS that has expired
meanwhile (a commit after a job longer than the credentials' lifetime) is
refused by Azurite; under a lease whose source renews, the same store, and one
opened before the renewal, ask for a fresh SAS once and commit.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from airflow_delta_provider.delta.errors import StorageAccessDeniedError
from airflow_delta_provider.delta.storage import open_storage, renewal
from tests.storage_servers import AZURITE_ACCOUNT, AZURITE_KEY


def _sas(container: str, lifetime: timedelta) -> str:
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    return generate_container_sas(
        AZURITE_ACCOUNT,
        container,
        account_key=AZURITE_KEY,
        permission=ContainerSasPermissions(read=True, write=True, list=True, delete=True, add=True, create=True),
        expiry=datetime.now(timezone.utc) + lifetime,
    )


class Vending:
    """A catalog's side: the SAS it handed out first has expired; it vends one that lasts an hour."""

    def __init__(self, container: str) -> None:
        self.container = container
        self.vended = 0
        self.expired = True

    def expiring(self) -> bool:
        return self.expired

    def renew(self) -> dict[str, str]:
        self.vended += 1
        self.expired = False
        return {"AZURE_STORAGE_SAS_KEY": _sas(self.container, timedelta(hours=1))}


def test_a_commit_after_expiry_renews_first(azurite) -> None:
    container = azurite.create_container()
    location = f"abfss://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net/events"
    expired = {
        "AZURE_STORAGE_SAS_KEY": _sas(container, timedelta(seconds=-60)),  # the job outlived it
        "AZURE_STORAGE_ENDPOINT": azurite.endpoint,
        "AZURE_ALLOW_HTTP": "true",
    }
    with pytest.raises(StorageAccessDeniedError):  # what a commit met before: no renewal
        open_storage(location, expired).put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")

    source = Vending(container)
    opened_before = open_storage(location, expired)
    with renewal.lease(location, source):
        assert opened_before.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n")
        opened_later = open_storage(location, expired)
        assert opened_later.put_if_absent("_delta_log/00000000000000000001.json", b"{}\n")
        assert [m.name for m in opened_later.list_dir("_delta_log")] == [
            "00000000000000000000.json",
            "00000000000000000001.json",
        ]
    assert source.vended == 1  # once for every store of the table, not once per request
    with pytest.raises(StorageAccessDeniedError):  # the lease released: nothing renews any more
        open_storage(location, expired).get("_delta_log/00000000000000000000.json")
