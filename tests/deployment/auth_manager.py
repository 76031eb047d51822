"""Airflow's SimpleAuthManager with per-DAG read access, for the deployment tests.

SimpleAuthManager grants by role only: a ``viewer`` reads every DAG. A real
deployment restricts DAGs per user (FAB's or Keycloak's auth manager); this
one does the smallest such thing, through the very method Airflow and the
Delta pages ask (``is_authorized_dag``, which ``get_authorized_dag_ids``
calls per DAG): the user :data:`OUTSIDER` may read only the DAGs whose id
starts with :data:`OUTSIDER_PREFIX`. Every other user and check is
SimpleAuthManager's own.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

#: A viewer who may read only the DAGs named for them.
OUTSIDER = "outsider"
OUTSIDER_PREFIX = "outsider_"
#: ``[core] simple_auth_manager_users``: the admin the tests sign in as, and the outsider.
USERS = f"admin:admin,{OUTSIDER}:viewer"


class DagRestrictingAuthManager(SimpleAuthManager):
    """SimpleAuthManager, but :data:`OUTSIDER` reads only the DAGs prefixed :data:`OUTSIDER_PREFIX`."""

    def is_authorized_dag(self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None) -> bool:
        dag_id = getattr(details, "id", None)
        if user.get_name() == OUTSIDER and dag_id is not None and not dag_id.startswith(OUTSIDER_PREFIX):
            return False
        return super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)


SETTINGS = {
    "AIRFLOW__CORE__AUTH_MANAGER": f"{__name__}.{DagRestrictingAuthManager.__name__}",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": USERS,
}
