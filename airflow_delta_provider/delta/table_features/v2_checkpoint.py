"""The ``v2Checkpoint`` table feature (PROTOCOL.md "V2 Checkpoint Table Feature").

A table that lists it gets V2 checkpoints: a UUID-named file with a
``checkpointMetadata`` action, its add and remove actions in sidecar files
(:mod:`airflow_delta_provider.delta.checkpoint.v2`). ``delta.checkpointPolicy=v2``
asks for it.
"""

from __future__ import annotations

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features.features import V2_CHECKPOINT, lists_writer_feature


def uses_v2_checkpoints(protocol: Protocol) -> bool:
    """Whether checkpoints of a table with ``protocol`` follow the V2 spec."""
    return lists_writer_feature(protocol, V2_CHECKPOINT)


def is_required(metadata: Metadata) -> bool:
    """Whether the table properties of ``metadata`` ask for V2 checkpoints."""
    return table_properties.checkpoint_policy(metadata) == table_properties.CHECKPOINT_POLICY_V2


def writes_v2_checkpoints(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether a new checkpoint follows the V2 spec: the protocol lists the
    feature and ``delta.checkpointPolicy`` is ``v2`` (delta-spark's
    ``CheckpointPolicy``: a table with the feature but the ``classic`` policy,
    as dropping the feature leaves it, gets classic checkpoints)."""
    return uses_v2_checkpoints(protocol) and is_required(metadata)
