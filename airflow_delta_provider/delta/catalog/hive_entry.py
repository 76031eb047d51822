"""The entry of a Delta table in a Hive-style catalog (the Hive Metastore, AWS Glue).

What the readers of such an entry look for:

- **Spark SQL with delta-spark** (``DeltaCatalog``): the table property
  ``spark.sql.sources.provider=delta`` makes Spark's ``HiveExternalCatalog``
  read it as a data source table, whose location is the storage property
  ``path``; delta-spark then reads the schema from the log, not the catalog.
  Spark itself stores such tables with ``SequenceFileInputFormat`` and
  ``LazySimpleSerDe``, the forms used here.
- **Athena** (Delta Lake tables): ``table_type=DELTA`` and the ``Location``;
  its columns come from the log too, and the entry's columns are what the
  console and Glue show.
- **Trino's Delta Lake connector**: the ``spark.sql.sources.provider=delta``
  property (or ``table_type=DELTA``) and the location.

The table type is ``EXTERNAL_TABLE`` (``EXTERNAL=TRUE``): dropping the entry
leaves the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROVIDER_PROPERTY = "spark.sql.sources.provider"
TABLE_TYPE = "EXTERNAL_TABLE"
INPUT_FORMAT = "org.apache.hadoop.mapred.SequenceFileInputFormat"
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat"
SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def table_parameters() -> dict[str, str]:
    """The table properties of a Delta table's entry."""
    return {"EXTERNAL": "TRUE", PROVIDER_PROPERTY: "delta", "table_type": "DELTA"}


def serde_parameters(location: str) -> dict[str, str]:
    """The storage properties: Spark reads a data source table's location from ``path``."""
    return {"serialization.format": "1", "path": location}


def is_delta_entry(parameters: Mapping[str, Any] | None) -> bool:
    """Whether an entry's table properties say Delta (delta-spark's or Athena's mark)."""
    params = {str(k).lower(): str(v).lower() for k, v in (parameters or {}).items()}
    return params.get(PROVIDER_PROPERTY) == "delta" or params.get("table_type") == "delta"


def entry_kind(table_type: str | None, parameters: Mapping[str, Any] | None) -> str:
    """What a non-Delta entry is, for the error that refuses it."""
    params = parameters or {}
    fmt = params.get(PROVIDER_PROPERTY) or params.get("table_type") or params.get("classification") or "Hive"
    return f"{table_type or 'table'} ({fmt})"


__all__ = [
    "INPUT_FORMAT",
    "OUTPUT_FORMAT",
    "PROVIDER_PROPERTY",
    "SERDE",
    "TABLE_TYPE",
    "entry_kind",
    "is_delta_entry",
    "serde_parameters",
    "table_parameters",
]
