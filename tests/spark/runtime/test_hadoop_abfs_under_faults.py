"""``io="hadoop"`` on Azure through 10% of requests failing: ABFS and our storage layer behind one fault proxy.

In hadoop mode Spark's ABFS connector (hadoop-azure) writes and reads the
data files with its own retries; the log, the commits and the post-commit
files go through the provider's storage layer. Azurite implements only the
Blob endpoint, so ABFS reaches it in its Blob-endpoint mode for
flat-namespace accounts, with the settings
:mod:`~airflow_delta_provider.spark.runtime.hadoop_store_conf` makes from an
emulator endpoint (``AZURE_STORAGE_ENDPOINT=http://127.0.0.1:<port>/<account>``)
and an ``abfs://`` (plain HTTP) table. Both clients go through the fault
proxy in front of Azurite: every fault kind, seeded, on the ``_delta_log``
requests only, then on every request. APPEND, UPDATE, DELETE, MERGE and
OPTIMIZE each commit exactly once with the right rows, or fail with a
retryable error and leave the table as it was; run again as Airflow retries
a task (same token), each lands once.

A Spark Connect server with hadoop-azure is a JVM of its own: this runs only
with ``FAULTS_ALL=1`` (``make test-faults``), as its S3A twin
(``test_hadoop_s3a_under_faults.py``) does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from airflow_delta_provider.delta.storage import parse_location
from airflow_delta_provider.spark.runtime.hadoop_store_conf import hadoop_store_settings
from tests.fault_proxy import FaultProxy
from tests.jar_cache import jars
from tests.spark.runtime.test_hadoop_s3a_under_faults import SCOPES, operations_through_faults
from tests.spark_connect_server import ConnectServer
from tests.storage_servers import AZURITE_ACCOUNT, Azurite, Backend, FaultyStore, azure_behind

pytestmark = [
    pytest.mark.skipif(os.environ.get("FAULTS_ALL") != "1", reason="FAULTS_ALL=1 (make test-faults) only"),
    pytest.mark.timeout(1800),  # a JVM with hadoop-azure, six operations each way: long on a shared machine
]

#: ABFS's own retries, quick: under faults it must retry rather than fail at the first one.
ABFS_RETRIES = {
    "spark.hadoop.fs.azure.io.retry.max.retries": "7",
    "spark.hadoop.fs.azure.io.retry.min.backoff.interval": "50",
    "spark.hadoop.fs.azure.io.retry.max.backoff.interval": "500",
    "spark.hadoop.fs.azure.io.retry.backoff.interval": "50",
}


@pytest.fixture(scope="module")
def container(azurite: Azurite) -> Iterator[FaultyStore]:
    """A container on the shared Azurite, reached through a fault proxy (both the core and ABFS)."""
    proxy = FaultProxy(azurite.port, hold_seconds=0.8)
    yield azure_behind(azurite, proxy)
    proxy.close()


@pytest.fixture(scope="module")
def abfs_root(container) -> str:
    return f"abfs://{container.bucket}@{AZURITE_ACCOUNT}.dfs.core.windows.net"


@pytest.fixture(scope="module")
def abfs_server(container, abfs_root, tmp_path_factory) -> Iterator[ConnectServer]:
    settings = hadoop_store_settings(parse_location(abfs_root), container.env)
    assert f"fs.azure.abfs.endpoint.{AZURITE_ACCOUNT}.dfs.core.windows.net" in settings
    server = ConnectServer(
        tmp_path_factory.mktemp("abfs-faults"),
        env=container.env,
        conf=ABFS_RETRIES,
        jars=jars("hadoop-azure"),
        secret_conf={f"spark.hadoop.{key}": value for key, value in settings.items()},
    )
    yield server
    server.stop()
    assert container.secret not in server.log.read_text(errors="replace"), "secret in the server's log"


@pytest.mark.parametrize("scope", SCOPES)
def test_hadoop_operations_through_ten_percent_faults_commit_once(abfs_server, container, abfs_root, azurite, scope):
    direct = Backend("azure", container.base, azurite.settings())
    # unpartitioned: Azurite lists a folder's sub-folders before its blobs (Azure/Azurite#321; Azure
    # sorts them), and ABFS drops the duplicate entry of a folder's marker blob only from a sorted
    # listing, so Hadoop's committer sees a new partition folder twice and fails on the moved copy
    operations_through_faults(container, abfs_server, abfs_root, scope, direct, partition_by=None)
