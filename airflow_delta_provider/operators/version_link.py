"""The extra link from a writing task instance to the page of the version it committed.

The page is the provider's plugin's (``airflow_delta_provider.ui``) in
Airflow's UI. Airflow 3 resolves a link when the task ends, in the task's own
process, and keeps it as an XCom: the link is built from the operator's
result (the table and the committed version) and is empty when the task
committed nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk.types import TaskInstanceKey


class DeltaVersionLink(BaseOperatorLink):
    """The Delta page of the table version this task committed."""

    name = "Delta version"

    def get_link(self, operator: Any, *, ti_key: TaskInstanceKey) -> str:
        from airflow_delta_provider.utils.ui_paths import version_path

        committed = getattr(operator, "_committed", None)
        if not committed or committed.get("version") is None:
            return ""
        return version_path(operator.table_asset_uri(), committed["version"])


__all__ = ["DeltaVersionLink"]
