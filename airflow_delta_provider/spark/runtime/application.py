"""The file spark-submit runs: the Spark CLI's ``__main__.py``, wherever the package is installed.

``python -m airflow_delta_provider.spark --app-path`` prints it, for
``spark-submit $(python -m airflow_delta_provider.spark --app-path) update ...``;
the Airflow hook submits the same file.
"""

from __future__ import annotations

from pathlib import Path

#: The Spark CLI's module file, which spark-submit runs.
APPLICATION = str(Path(__file__).resolve().parents[1] / "__main__.py")
#: The CLI switch that prints :data:`APPLICATION`.
APP_PATH_FLAG = "--app-path"

__all__ = ["APPLICATION", "APP_PATH_FLAG"]
