"""The Delta transaction protocol in pure Python and pyarrow.

This package imports neither pyspark nor airflow. It follows Delta Kernel's
shape: :class:`DeltaTable` opens :class:`Snapshot` s and starts
:class:`Transaction` s; an engine (``airflow_delta_provider.spark``) writes the
data files and hands the core the actions to commit.
"""

from airflow_delta_provider.delta.errors import *  # noqa: F401,F403
