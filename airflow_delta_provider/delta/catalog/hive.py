"""A Hive Metastore client over Thrift, with ``hmsclient`` (the ``[hive]`` extra,
the client apache-airflow-providers-apache-hive uses).

The metastore gives locations only: storage credentials come from
``storage_conn_id`` or the cloud chain. The entry it creates is
:mod:`.hive_entry`'s, the one delta-spark's ``DeltaCatalog`` reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from airflow_delta_provider.delta.catalog import hive_entry
from airflow_delta_provider.delta.catalog.columns import hive_columns
from airflow_delta_provider.delta.catalog.model import CatalogEntry, VendedCredentials
from airflow_delta_provider.delta.catalog.reference import CatalogReference
from airflow_delta_provider.delta.errors import (
    CatalogError,
    CatalogTableNotFoundError,
    CatalogUnavailableError,
    InvalidArgumentError,
)


class HiveCatalogClient:
    """The metastore at ``uri`` (``thrift://host:9083``)."""

    def __init__(self, uri: str, timeout: float = 10.0) -> None:
        from hmsclient.hmsclient import HMSClient
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        parsed = urlparse(uri if "://" in uri else f"thrift://{uri}")
        if not parsed.hostname:
            raise InvalidArgumentError(f"not a metastore URI: {uri!r} (expected thrift://host:port)")
        self.uri = uri
        self._key = (parsed.hostname, parsed.port or 9083, timeout)
        idle = _take_idle(self._key)
        if idle is not None:
            self._transport, self._client = idle
            self._open = True
            return
        socket = TSocket.TSocket(parsed.hostname, parsed.port or 9083)
        socket.setTimeout(int(timeout * 1000))
        self._transport = TTransport.TBufferedTransport(socket)
        self._client = HMSClient(iprot=TBinaryProtocol.TBinaryProtocolAccelerated(self._transport))
        self._open = False

    def close(self) -> None:
        """Give the open connection back to the process's idle ones (a new one costs the
        metastore about as much as three calls), or close it when enough are idle."""
        if self._open:
            self._open = False
            if not _keep_idle(self._key, (self._transport, self._client)):
                self._transport.close()

    def _drop(self) -> None:
        if self._open:
            self._open = False
            self._transport.close()

    @contextmanager
    def _calling(self, what: str) -> Iterator[Any]:
        from hmsclient.genthrift.hive_metastore.ttypes import NoSuchObjectException
        from thrift.Thrift import TException
        from thrift.transport.TTransport import TTransportException

        try:
            if not self._open:
                self._transport.open()
                self._open = True
            yield self._client
        except NoSuchObjectException as exc:
            raise CatalogTableNotFoundError(f"Hive Metastore ({what}): {exc.message}") from None
        except (TTransportException, OSError) as exc:
            self._drop()
            raise CatalogUnavailableError(f"the Hive Metastore at {self.uri} is unreachable ({what}): {exc}") from None
        except TException as exc:
            raise CatalogError(
                f"Hive Metastore ({what}): {type(exc).__name__}: {getattr(exc, 'message', exc)}"
            ) from None

    def get(self, ref: CatalogReference) -> CatalogEntry | None:
        database, name = ref.parts
        try:
            with self._calling(f"table {ref.name}") as hms:
                table = hms.get_table(database, name)
        except CatalogTableNotFoundError:
            with self._calling(f"database {database}") as hms:
                hms.get_database(database)  # not found: the database is missing
            return None
        storage = table.sd
        parameters = dict(table.parameters or {})
        serde = dict((storage.serdeInfo.parameters or {}) if storage and storage.serdeInfo else {})
        return CatalogEntry(
            location=serde.get("path") or (storage.location if storage else "") or "",
            is_delta=hive_entry.is_delta_entry(parameters),
            columns=tuple((c.name, c.type) for c in (storage.cols or ())) if storage else (),
            kind=hive_entry.entry_kind(table.tableType, parameters),
        )

    def default_location(self, ref: CatalogReference) -> str:
        database = ref.parts[0]
        with self._calling(f"database {database}") as hms:
            root = hms.get_database(database).locationUri
        if not root:
            raise InvalidArgumentError(f"{ref}: database {database} has no location; give the new table's location")
        root = str(root)
        if root.startswith("file:/") and not root.startswith("file://"):  # Hadoop's file:/path
            root = "file://" + root[len("file:") :]
        return f"{root.rstrip('/')}/{ref.table}"

    def _table(self, ref: CatalogReference, location: str, schema: Mapping[str, Any]) -> Any:
        from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor, Table

        columns = [FieldSchema(name=name, type=type_text, comment=None) for name, type_text in hive_columns(schema)]
        storage = StorageDescriptor(
            cols=columns,
            location=location,
            inputFormat=hive_entry.INPUT_FORMAT,
            outputFormat=hive_entry.OUTPUT_FORMAT,
            compressed=False,
            numBuckets=-1,
            serdeInfo=SerDeInfo(serializationLib=hive_entry.SERDE, parameters=hive_entry.serde_parameters(location)),
            bucketCols=[],
            sortCols=[],
            parameters={},
        )
        return Table(
            tableName=ref.table,
            dbName=ref.parts[0],
            sd=storage,
            partitionKeys=[],
            parameters=hive_entry.table_parameters(),
            tableType=hive_entry.TABLE_TYPE,
        )

    def register(
        self, ref: CatalogReference, location: str, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        with self._calling(f"create table {ref.name}") as hms:
            hms.create_table(self._table(ref, location, schema))

    def update_columns(
        self, ref: CatalogReference, entry: CatalogEntry, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        with self._calling(f"alter table {ref.name}") as hms:
            hms.alter_table(ref.parts[0], ref.table, self._table(ref, entry.location, schema))

    def table_credentials(self, ref: CatalogReference, entry: CatalogEntry, write: bool) -> VendedCredentials | None:
        return None

    def path_credentials(self, location: str, write: bool) -> VendedCredentials | None:
        return None


#: Open connections a process keeps per metastore, and how long one may sit idle before it is
#: closed rather than reused (a server or a load balancer may have dropped it by then).
_IDLE_PER_METASTORE = 2
_IDLE_SECONDS = 60.0
_idle: dict[tuple[str, int, float], list[tuple[float, Any]]] = {}
_idle_lock = threading.Lock()


def _take_idle(key: tuple[str, int, float]) -> Any | None:
    """An open ``(transport, client)`` left by an earlier client of this process, if one is fresh."""
    now = time.monotonic()
    with _idle_lock:
        connections = _idle.get(key, [])
        while connections:
            since, connection = connections.pop()
            if now - since < _IDLE_SECONDS:
                return connection
            connection[0].close()
    return None


def _keep_idle(key: tuple[str, int, float], connection: Any) -> bool:
    with _idle_lock:
        connections = _idle.setdefault(key, [])
        if len(connections) >= _IDLE_PER_METASTORE:
            return False
        connections.append((time.monotonic(), connection))
        return True


__all__ = ["HiveCatalogClient"]
