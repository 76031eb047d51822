"""The round trip builds operators: they need the session's throwaway AIRFLOW_HOME before airflow loads."""

import tests.airflow_env  # noqa: F401  (sets the environment on import)
