"""Airflow-side tests need the session's throwaway AIRFLOW_HOME before airflow loads."""

import tests.airflow_env  # noqa: F401  (sets the environment on import)
from tests.airflow_env import airflow_db  # noqa: F401  (fixture)
from tests.operators.s3_connection import s3_connection  # noqa: F401  (fixture)
