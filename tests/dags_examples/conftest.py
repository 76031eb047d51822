"""Airflow-side tests need the session's throwaway AIRFLOW_HOME before airflow loads."""

import airflow_env  # noqa: F401  (sets the environment on import)
from airflow_env import airflow_db  # noqa: F401  (fixture)
