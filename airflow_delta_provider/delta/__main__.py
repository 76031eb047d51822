import sys

from airflow_delta_provider.delta.cli import main

sys.exit(main())
