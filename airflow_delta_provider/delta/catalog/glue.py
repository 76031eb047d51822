"""An AWS Glue Data Catalog client, over boto3 (the ``[glue]`` extra).

Glue gives locations only: storage credentials come from ``storage_conn_id``
or the AWS chain, as for a table named by its path. The entry it creates is
:mod:`.hive_entry`'s, with the columns in ``StorageDescriptor.Columns``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from airflow_delta_provider.delta.catalog import hive_entry
from airflow_delta_provider.delta.catalog.columns import hive_columns
from airflow_delta_provider.delta.catalog.model import CatalogEntry, VendedCredentials
from airflow_delta_provider.delta.catalog.reference import CatalogReference
from airflow_delta_provider.delta.errors import (
    CatalogAccessDeniedError,
    CatalogError,
    CatalogTableNotFoundError,
    CatalogUnavailableError,
    InvalidArgumentError,
)

_DENIED = frozenset(
    {"AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException"}
)


#: One boto3 Glue client per set of arguments (and AWS environment, which boto3 reads) in a
#: process: boto3 clients are thread-safe, and building one costs far more than a call.
_POOL: dict[tuple[Any, ...], Any] = {}
_POOL_LOCK = threading.Lock()


def _shared(args: tuple[tuple[str, str], ...], timeout: float) -> Any:
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    key = (args, environment, timeout)
    with _POOL_LOCK:
        client = _POOL.get(key)
        if client is None:
            import boto3
            from botocore.config import Config

            options = dict(args)
            endpoint = options.pop("endpoint_url", None)
            options.pop("catalog_id", None)
            session = boto3.session.Session(**options)
            config = Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 2})
            client = _POOL[key] = session.client("glue", endpoint_url=endpoint, config=config)
        return client


class GlueCatalogClient:
    """The Glue Data Catalog of the AWS account and region ``aws`` (boto3 arguments) point at."""

    def __init__(self, aws: Mapping[str, str] | None = None, timeout: float = 10.0) -> None:
        args = dict(aws or {})
        self._glue = _shared(tuple(sorted(args.items())), timeout)
        self._catalog = {"CatalogId": args["catalog_id"]} if args.get("catalog_id") else {}

    def close(self) -> None:
        """Nothing to release: the process's pooled boto3 client stays for the next name."""

    @contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            yield
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            message = f"AWS Glue ({what}): {code}: {exc.response.get('Error', {}).get('Message', '')}"
            if code == "EntityNotFoundException":
                raise CatalogTableNotFoundError(message) from None
            if code in _DENIED:
                raise CatalogAccessDeniedError(message) from None
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
            if status >= 500 or code in ("ThrottlingException", "InternalServiceException"):
                raise CatalogUnavailableError(message) from None
            raise CatalogError(message) from None
        except NoCredentialsError as exc:
            raise CatalogAccessDeniedError(f"AWS Glue ({what}): {exc}") from None
        except BotoCoreError as exc:
            raise CatalogUnavailableError(f"AWS Glue is unreachable ({what}): {exc}") from None

    def get(self, ref: CatalogReference) -> CatalogEntry | None:
        database, name = ref.parts
        try:
            with self._calling(f"table {ref.name}"):
                table = self._glue.get_table(DatabaseName=database, Name=name, **self._catalog)["Table"]
        except CatalogTableNotFoundError:
            with self._calling(f"database {database}"):
                self._glue.get_database(Name=database, **self._catalog)  # not found: the database is missing
            return None
        storage = table.get("StorageDescriptor") or {}
        parameters = table.get("Parameters") or {}
        location = storage.get("Location") or (storage.get("SerdeInfo") or {}).get("Parameters", {}).get("path") or ""
        return CatalogEntry(
            location=location,
            is_delta=hive_entry.is_delta_entry(parameters),
            columns=tuple((c["Name"], c.get("Type", "")) for c in storage.get("Columns") or ()),
            kind=hive_entry.entry_kind(table.get("TableType"), parameters),
        )

    def default_location(self, ref: CatalogReference) -> str:
        database = ref.parts[0]
        with self._calling(f"database {database}"):
            root = self._glue.get_database(Name=database, **self._catalog)["Database"].get("LocationUri")
        if not root:
            raise InvalidArgumentError(
                f"{ref}: Glue database {database} has no location; give the new table's location"
            )
        return f"{str(root).rstrip('/')}/{ref.table}"

    def _table_input(self, ref: CatalogReference, location: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "Name": ref.table,
            "TableType": hive_entry.TABLE_TYPE,
            "Parameters": hive_entry.table_parameters(),
            "StorageDescriptor": {
                "Columns": [{"Name": name, "Type": type_text} for name, type_text in hive_columns(schema)],
                "Location": location,
                "InputFormat": hive_entry.INPUT_FORMAT,
                "OutputFormat": hive_entry.OUTPUT_FORMAT,
                "SerdeInfo": {
                    "SerializationLibrary": hive_entry.SERDE,
                    "Parameters": hive_entry.serde_parameters(location),
                },
            },
            "PartitionKeys": [],
        }

    def register(
        self, ref: CatalogReference, location: str, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        with self._calling(f"create table {ref.name}"):
            self._glue.create_table(
                DatabaseName=ref.parts[0], TableInput=self._table_input(ref, location, schema), **self._catalog
            )

    def update_columns(
        self, ref: CatalogReference, entry: CatalogEntry, schema: Mapping[str, Any], partition_columns: Sequence[str]
    ) -> None:
        with self._calling(f"update table {ref.name}"):
            self._glue.update_table(
                DatabaseName=ref.parts[0], TableInput=self._table_input(ref, entry.location, schema), **self._catalog
            )

    def table_credentials(self, ref: CatalogReference, entry: CatalogEntry, write: bool) -> VendedCredentials | None:
        return None

    def path_credentials(self, location: str, write: bool) -> VendedCredentials | None:
        return None


__all__ = ["GlueCatalogClient"]
