"""The Delta transaction protocol in pure Python and pyarrow.

This package imports neither pyspark nor airflow. It follows Delta Kernel's
shape: :class:`DeltaTable` (:mod:`.table`) opens :class:`Snapshot` s
(:mod:`.snapshot`) and starts :class:`Transaction` s; an engine
(``airflow_delta_provider.spark``) writes the data files and hands the core
the actions to commit.

One folder per concept: :mod:`.actions`, :mod:`.log`, :mod:`.checkpoint`,
:mod:`.schema`, :mod:`.table_features`, :mod:`.expressions`,
:mod:`.scan` (file skipping, the MERGE condition), :mod:`.transaction`,
:mod:`.operations` and :mod:`.storage`.
Beside them: the table properties (:mod:`.table_properties`), partition
values (:mod:`.partitions`), the changes of a version range
(:mod:`.table_changes`), the errors (:mod:`.errors`, re-exported here) and
the command line (:mod:`.cli`).
"""

from airflow_delta_provider.delta.errors import *  # noqa: F403
