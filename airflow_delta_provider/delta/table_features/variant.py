"""The ``variantType`` table feature (PROTOCOL.md "Variant Data Type").

A table with a ``variant`` column at any depth needs it. delta-spark 3.2 to
4.0 named it ``variantType-preview``; a table that lists the preview name
keeps it, as delta-spark does, and needs nothing more. Variant columns are
read and written unshredded (their Arrow form:
:data:`airflow_delta_provider.delta.schema.arrow.VARIANT_ARROW_TYPE`), with no
statistics.
"""

from __future__ import annotations

from airflow_delta_provider.delta.actions.model import Metadata
from airflow_delta_provider.delta.schema.fields import uses_type
from airflow_delta_provider.delta.schema.types import VARIANT


def is_used(metadata: Metadata) -> bool:
    """Whether the schema of ``metadata`` has a ``variant`` column at any depth."""
    return uses_type(metadata.schema_json, VARIANT)
