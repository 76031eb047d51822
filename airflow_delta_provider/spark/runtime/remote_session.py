"""A Spark Connect session for one operation, configured for Delta writes.

Over Spark Connect the engine runs as a client in the calling process (an
Airflow task), and the server runs the Spark jobs. What differs from a
spark-submit session:

- Each operation gets a new server-side session (``builder.create()``), so
  its settings, tags and artifacts are its own, and it is released at the
  end (:meth:`close`).
- Only runtime settings can be set: :data:`~.session.REQUIRED_CONF` and the
  caller's ``conf``. A static or cluster setting (``spark.executor.memory``,
  ``spark.ui.enabled``, ...) belongs to the server: it is skipped with a
  warning that names it, unless the server already has the value asked for.
- The package's py-files zip is added as a session artifact, so the server's
  Python workers import the same code as the client (``--py-files`` in
  spark-submit terms).
- The server's executors use the server's own environment: store
  credentials never leave this process, so a table on an object store needs
  ``io=arrow`` credentials (or a Hadoop connector's settings) on the server.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import pyspark

from airflow_delta_provider.delta.errors import (
    DeltaError,
    EngineAccessDeniedError,
    EngineUnavailableError,
    InvalidInputError,
    first_line,
)
from airflow_delta_provider.spark.runtime.session import (
    REQUIRED_CONF,
    SPARK_DEFAULT_REDACTION_REGEX,
    check_spark_version,
)

log = logging.getLogger(__name__)

#: The client name the server's UI and logs show for our sessions.
USER_AGENT = "airflow-delta-provider"
#: Retries of a call the server did not answer (gRPC UNAVAILABLE): about 4 s of
#: back-off in all, where PySpark's default waits 10 minutes. Airflow's own task
#: retries are the place for longer outages.
CONNECT_RETRIES = 4
#: What makes ``pyspark.sql.functions`` build Connect columns (``pyspark.sql.utils.is_remote``).
CONNECT_MODE_VARIABLE = "SPARK_CONNECT_MODE_ENABLED"


_mode_lock = threading.Lock()
_mode_users = 0
_mode_previous: str | None = None


@contextmanager
def connect_mode() -> Iterator[None]:
    """PySpark's process-wide Spark Connect switch, on for the block.

    ``pyspark.sql.functions`` (``F.col``, ``F.expr``, ...) builds Connect or
    classic columns by an environment variable that PySpark's own
    ``builder.remote()`` sets for good. An Airflow task process runs one
    operation; a process that also holds a classic session (a test suite)
    gets its previous state back once the last block in any thread has ended.
    """
    global _mode_users, _mode_previous
    with _mode_lock:
        if _mode_users == 0:
            _mode_previous = os.environ.get(CONNECT_MODE_VARIABLE)
            os.environ[CONNECT_MODE_VARIABLE] = "1"
        _mode_users += 1
    try:
        yield
    finally:
        with _mode_lock:
            _mode_users -= 1
            if _mode_users == 0:
                if _mode_previous is None:
                    os.environ.pop(CONNECT_MODE_VARIABLE, None)
                else:
                    os.environ[CONNECT_MODE_VARIABLE] = _mode_previous


def connect_session(
    url: str,
    conf: Mapping[str, str] | None = None,
    py_files: Iterable[str] = (),
) -> Any:
    """A new Spark Connect session on the server at ``url`` (``sc://host:port/;params``).

    Raises :class:`~airflow_delta_provider.delta.errors.EngineUnavailableError`
    when the server cannot be reached (a retry may find it),
    :class:`~airflow_delta_provider.delta.errors.EngineAccessDeniedError` when
    it refuses the credentials, :class:`InvalidInputError` for a malformed URL
    or a setting the server will not take, and UnsupportedFeatureError when
    the server runs another Spark release than this PySpark. No message names
    the URL's parameters (its token).
    """
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    where = redact_url(url)
    if not url.startswith("sc://"):
        raise InvalidInputError(f"a Spark Connect URL starts with sc://, not {where!r}")
    session = None
    try:
        session = RemoteSparkSession.builder.remote(_with_user_agent(url)).create()
        session.client.set_retry_policies(retry_policies())
        version = session.version
        check_spark_version(pyspark.__version__, version, None)
        for key, value in {**dict(conf or {}), **REQUIRED_CONF}.items():
            _set(session, key, str(value))
        for path in py_files:
            session.addArtifacts(path, pyfile=True)
    except BaseException as exc:
        if session is not None:
            close(session)
        if isinstance(exc, DeltaError) or not isinstance(exc, Exception):
            raise
        raise _session_error(exc, where) from None  # the cause may quote the URL, token included
    return session


def _session_error(exc: Exception, where: str) -> DeltaError:
    """What a failure to open a session means, in one line that names no secret."""
    reason = unreachable_reason(exc)
    if reason is not None:
        return EngineUnavailableError(f"cannot reach the Spark Connect server at {where}: {reason}")
    text = str(exc)
    if any(code in text for code in ("StatusCode.UNAUTHENTICATED", "StatusCode.PERMISSION_DENIED")):
        return EngineAccessDeniedError(f"the Spark Connect server at {where} refused the connection's credentials")
    condition = getattr(exc, "getCondition", lambda: None)()
    if condition and condition.startswith("INVALID_CONNECT_URL"):
        return InvalidInputError(f"the Spark Connect URL for {where} is not valid ({condition})")
    return EngineUnavailableError(
        f"cannot open a session on the Spark Connect server at {where}: {type(exc).__name__}"
        + (f" [{condition}]" if condition else "")
    )


def retry_policies() -> list[Any]:
    """Retry an unanswered call (gRPC UNAVAILABLE) :data:`CONNECT_RETRIES` times."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return [DefaultPolicy(max_retries=CONNECT_RETRIES)]


def close(session: Any) -> None:
    """Release the server-side session; a server already gone is no error."""
    with suppress(Exception):
        session.stop()


def redact_url(url: str) -> str:
    """``url`` without its parameters (``;token=...`` is a secret)."""
    return url.split(";", 1)[0].rstrip("/")


#: What the server answers for a setting only its own start can make.
_SERVER_SETTINGS = ("CANNOT_MODIFY_CONFIG", "CANNOT_MODIFY_STATIC_CONFIG")


def _set(session: Any, key: str, value: str) -> None:
    from pyspark.errors import PySparkException

    try:
        session.conf.set(key, value)
    except PySparkException as exc:
        if unreachable_reason(exc) is not None:
            raise
        if exc.getCondition() not in _SERVER_SETTINGS:
            why = exc.getCondition() if _secret_setting(key) else first_line(exc)  # the text may quote the value
            raise InvalidInputError(f"the Spark setting {key} is refused: {why}") from None
        if session.conf.get(key, None) != value:
            shown = value if not _secret_setting(key) else "***"
            log.warning("Spark setting %s is the Spark Connect server's own; %s=%s is ignored", key, key, shown)


def _secret_setting(key: str) -> bool:
    """Whether Spark would hide ``key``'s value (its default ``spark.redaction.regex``)."""
    return re.search(SPARK_DEFAULT_REDACTION_REGEX, key) is not None


def unreachable_reason(exc: BaseException) -> str | None:
    """One line saying why the server did not answer, when ``exc`` (or what
    caused it) is gRPC's UNAVAILABLE; None for any other error."""
    import grpc

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:
        if isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.UNAVAILABLE:
            return f"UNAVAILABLE: {error.details()}"
    for error in chain:  # PySpark's wrappers keep only the text
        text = str(error)
        if "StatusCode.UNAVAILABLE" in text:
            details = re.search(r'details = "([^"]*)"', text)
            return f"UNAVAILABLE: {details.group(1)}" if details else "UNAVAILABLE"
    return None


def _with_user_agent(url: str) -> str:
    if "user_agent=" in url:
        return url
    base, _, params = url.partition(";")
    kept = [p for p in params.split(";") if p]
    return f"{base.rstrip('/')}/;{';'.join([*kept, f'user_agent={USER_AGENT}'])}"


__all__ = [
    "CONNECT_MODE_VARIABLE",
    "CONNECT_RETRIES",
    "USER_AGENT",
    "close",
    "connect_mode",
    "connect_session",
    "redact_url",
    "retry_policies",
    "unreachable_reason",
]
