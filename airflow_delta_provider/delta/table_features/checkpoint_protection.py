"""The ``checkpointProtection`` table feature (PROTOCOL.md "Checkpoint Protection").

delta-spark adds it when a feature is dropped: the checkpoints that hide the
dropped feature's records must stay, so no checkpoint may be written, and no
log cleanup may stop, below ``delta.requireCheckpointProtectionBeforeVersion``
(:mod:`airflow_delta_provider.delta.checkpoint`).
"""

from __future__ import annotations

from airflow_delta_provider.delta import table_properties
from airflow_delta_provider.delta.actions.model import Metadata, Protocol
from airflow_delta_provider.delta.table_features.features import CHECKPOINT_PROTECTION, lists_writer_feature


def protects_checkpoints(protocol: Protocol) -> bool:
    """Whether ``protocol`` lists ``checkpointProtection``."""
    return lists_writer_feature(protocol, CHECKPOINT_PROTECTION)


def protected_before(protocol: Protocol, metadata: Metadata) -> int:
    """The version below which the table's history is protected; 0 when it is not."""
    if not protects_checkpoints(protocol):
        return 0
    return table_properties.checkpoint_protection_version(metadata)
