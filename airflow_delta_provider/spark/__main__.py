"""Entry point: ``python -m airflow_delta_provider.spark`` and the spark-submit application.

Imports are absolute so that spark-submit can run this file directly with
the package zipped in ``--py-files``.
"""

import sys

from airflow_delta_provider.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
