"""The ``deletionVectors`` table feature (PROTOCOL.md "Deletion Vectors").

A deletion vector marks rows of a data file as deleted without rewriting
it. Every scan applies them and every remove carries them (the descriptors
and their decoding: :mod:`airflow_delta_provider.delta.actions.deletion_vectors`);
DELETE and UPDATE write them instead of rewriting files when the table
enables them.
"""

from __future__ import annotations

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features.features import DELETION_VECTORS, lists_writer_feature


def is_required(metadata: Metadata) -> bool:
    """Whether ``delta.enableDeletionVectors`` asks for the feature."""
    return table_properties.deletion_vectors_enabled(metadata)


def writes_deletion_vectors(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether writers mark deleted rows in vectors instead of rewriting
    files: the table enables them and its protocol lists the feature."""
    return is_required(metadata) and lists_writer_feature(protocol, DELETION_VECTORS)
