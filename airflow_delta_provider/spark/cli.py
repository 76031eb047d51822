"""Command line of the Spark applications (what spark-submit runs).

``python -m airflow_delta_provider.spark <operation> TABLE [options]``: the
operations and their options are the request dataclasses of
the specs of :mod:`airflow_delta_provider.operations`, which generate this parser; each
request runs the command :mod:`~airflow_delta_provider.operations.runners`
maps its type to.

``--io`` (one of :data:`~airflow_delta_provider.IO_MODES`) picks how
data files are read and written (:mod:`airflow_delta_provider.spark.runtime.io_mode`);
commands that touch no data file accept it and ignore it.

Before it opens a Spark session, each command checks what it can from the
table's log alone (:mod:`airflow_delta_provider.operations.preflight`): a
mistyped table, column or source path fails in a second.

The last stdout line is the result as one JSON object
(``{"table","operation","version","metrics"}``, plus ``"files"`` for a dry-run
vacuum). Bad input, unsupported tables and conflicts exit with code 2 and
one line on stderr, ``ClassName: message``; the table is left unchanged.
Spark errors are bad input when the input caused them: SQLSTATE class 22
(a data exception), or class 42 (an analysis error) raised while the user's
SQL was analysed or ran (:func:`~airflow_delta_provider.spark.conditions.user_input`).
A class 42 error on SQL the provider built is our bug: ``InternalError``,
whose message says so, asks for a report and names the logical column of
any physical one (``col-<uuid>``) in Spark's text. It, and any other
failure, exits with code 1: the traceback, then one ``ClassName: message``
line, last.

PySpark logs every error it converts from the JVM with the whole JVM stack
(its ``SQLQueryContextLogger``, one JSON line of kilobytes). Those records are
dropped unless ``--debug`` is given: bad input is reported by its one line, and
a crash by its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from airflow_delta_provider.delta.catalog.binding import CatalogTable, bind
from airflow_delta_provider.delta.catalog.settings import RENEWS_ENV
from airflow_delta_provider.delta.errors import (
    DeltaError,
    InternalError,
    InvalidInputError,
    StorageError,
    first_line,
    one_line,
)
from airflow_delta_provider.delta.storage.hidden_paths import STAGING_PREFIX
from airflow_delta_provider.operations import argv as argv_codec
from airflow_delta_provider.operations.catalog import bind_spec
from airflow_delta_provider.operations.runners import run_spec
from airflow_delta_provider.operations.runners.preflight import preflight
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.spark.runtime.application import APP_PATH_FLAG, APPLICATION
from airflow_delta_provider.spark.runtime.driver_output import stderr_to_driver_jvm, submitting_jvm
from airflow_delta_provider.spark.runtime.progress import Report, reporting_progress

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors follow the one-line error convention."""

    def error(self, message: str) -> NoReturn:
        raise InvalidInputError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The CLI's parser, generated from the operations' specs (:mod:`airflow_delta_provider.operations.argv`)."""
    return argv_codec.build_parser(_Parser, description=__doc__.splitlines()[0])


def parse_request(argv: Sequence[str] | None = None) -> OperationSpec:
    """The request ``argv`` describes (default ``sys.argv[1:]``); InvalidInputError for bad usage."""
    return _as_request(build_parser().parse_args(None if argv is None else list(argv)))


#: PySpark's loggers that record every error converted from Spark, with its JVM stack.
SPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def _as_request(args: OperationSpec | argparse.Namespace) -> OperationSpec:
    """A request, also from :func:`build_parser`'s namespace."""
    if isinstance(args, argparse.Namespace):
        try:
            return argv_codec.request_from_namespace(args)
        except ValueError as exc:  # a rule of the request that argparse cannot express
            raise InvalidInputError(str(exc)) from None
    return args


def main(
    argv: Sequence[str] | None = None,
    session_factory: Callable[[dict[str, str]], Any] | None = None,
) -> int:
    """Run one command; the process exit code.

    Bad input exits with :data:`EXIT_BAD_INPUT` and one stderr line. Any
    other failure exits with :data:`EXIT_INTERNAL`: the traceback, then one
    summarising ``ClassName: message`` line, last, for the Airflow hook.
    ``--app-path`` alone prints the application file spark-submit runs.
    Under spark-submit, stderr goes to the JVM's stderr (:mod:`.runtime.driver_output`).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if args == [APP_PATH_FLAG]:
        print(APPLICATION)
        return EXIT_OK
    with stderr_to_driver_jvm(_submitting_jvm()):
        return _main(args, session_factory)


def _submitting_jvm() -> Any:
    """spark-submit's JVM; None without one, or when its gateway cannot be reached (the JVM reports that)."""
    try:
        return submitting_jvm()
    except Exception:
        return None


def _main(argv: Sequence[str], session_factory: Callable[[dict[str, str]], Any] | None) -> int:
    catalog = renewing = None
    try:
        request, catalog = bind_spec(parse_request(argv))
        if catalog is None:
            renewing = _renewing(request)
        if catalog is not None:
            # Before pre-flight reads the table and the session starts, so Spark's JVM and
            # workers inherit them; never in argv or a log.
            os.environ.update(catalog.storage_options())
            # Renewed before expiry for the driver's reads and its commit after a long job, and
            # copied here for the workers of later arrow jobs (docs/catalogs.rst, "Long jobs").
            catalog.lease(on_renew=os.environ.update)
        preflight(request)  # from the table's log, before a session starts
        spark = None
        if request.needs_spark():
            conf = dict(request.spark_conf)
            spark = session_factory(conf) if session_factory else _default_session(conf, request.debug)
        result = execute(request, spark, report_progress=_print_progress)
        if catalog is not None and not request.reads_only:
            os.environ.update(catalog.storage_options())  # renewed, if they expire soon
            catalog.sync(warn=_print_warning)
    except InternalError as exc:  # our bug: the traceback too, for the report
        _crash(exc)
    except DeltaError as exc:
        _fail(exc)
    except Exception as exc:
        _crash(exc)
    finally:
        for bound in (catalog, renewing):
            if bound is not None:
                bound.close()
    print(result.to_json(), flush=True)
    return EXIT_OK


def execute(
    request: OperationSpec | argparse.Namespace,
    spark: Any,
    storage_options: Mapping[str, str] | None = None,
    report_progress: Report | None = None,
) -> Any:
    """Run the request (or :func:`build_parser`'s namespace) on ``spark``
    (None for a command that needs no Spark).

    Spark errors the input caused become InvalidInputError; PySpark's records
    of them are dropped unless ``request.debug``. ``storage_options`` reach the
    table from this process (default: the environment). ``report_progress``
    receives a progress line now and then while a long Spark job runs
    (:mod:`.runtime.progress`); None: no lines.
    """
    request = _as_request(request)
    with spark_error_records(enabled=request.debug or spark is None), reporting_progress(spark, report_progress):
        return _run_translating_spark_errors(request, spark, storage_options)


def _renewing(request: OperationSpec) -> CatalogTable | None:
    """The binding of the catalog name a hook ran by its location (:data:`RENEWS_ENV`, with the
    catalog's settings, in the environment): it renews the credentials the application was
    given, for the driver's reads and its commit after a long job. Only renews: the hook
    checked the table and keeps the entry."""
    name = os.environ.get(RENEWS_ENV)
    if not name:
        return None
    bound = bind(name, write=not request.reads_only, create=request.creates_table, location=request.table_path)
    if bound is not None:
        bound.lease(on_renew=os.environ.update)
    return bound


def _print_warning(line: str) -> None:
    """A warning on stderr (a catalog entry not updated after the commit), where the hook shows it."""
    print(f"WARNING: {line}", file=sys.stderr, flush=True)


def _print_progress(line: str) -> None:
    """A progress line on stderr, where spark-submit's hook reads it; stdout ends with the result."""
    print(line, file=sys.stderr, flush=True)


#: Commands silencing PySpark's error records right now, and what the loggers' flags were before the
#: first of them: commands may run in threads of one process (:mod:`.in_process`), and each restoring
#: the flags it saw would leave the loggers silenced for good after an overlap.
_silencing = threading.Lock()
_silencers = 0
_saved_flags: list[bool] = []


@contextmanager
def spark_error_records(enabled: bool) -> Iterator[None]:
    """Let PySpark's error records (:data:`SPARK_ERROR_LOGGERS`) through only when ``enabled``.

    PySpark logs each error it converts, with the whole JVM stack, before the
    error even reaches our handling; for bad input that is kilobytes of noise
    around the one line that matters. The loggers are process-wide: while any
    command silences them, they are silent for all.
    """
    global _silencers
    if enabled:
        yield
        return
    from pyspark.logger import PySparkLogger  # the loggers must be PySpark's own kind

    loggers = [PySparkLogger.getLogger(name) for name in SPARK_ERROR_LOGGERS]
    with _silencing:
        if _silencers == 0:
            _saved_flags[:] = [logger.disabled for logger in loggers]
            for logger in loggers:
                logger.disabled = True
        _silencers += 1
    try:
        yield
    finally:
        with _silencing:
            _silencers -= 1
            if _silencers == 0:
                for logger, disabled in zip(loggers, _saved_flags):
                    logger.disabled = disabled


def _run_translating_spark_errors(request: OperationSpec, spark: Any, storage_options: Mapping[str, str] | None) -> Any:
    """Run the command; Spark errors the input caused become InvalidInputError,
    analysis errors of SQL we built InternalError."""
    try:
        return run_spec(spark, request, storage_options)
    except DeltaError:
        raise
    except Exception as exc:
        translated = translate_spark_error(exc, lambda: _logical_names(request.table_path, storage_options))
        if translated is None:
            raise
        raise translated from exc


def _logical_names(table: str, storage_options: Mapping[str, str] | None) -> dict[str, str]:
    """``{physical: logical}`` column names of the table's latest version;
    empty when it cannot be read (the message then says a name is physical)."""
    try:
        from airflow_delta_provider.delta.table import DeltaTable
        from airflow_delta_provider.delta.table_features import column_mapping

        return column_mapping.logical_names(DeltaTable(table, storage_options=storage_options).snapshot().schema)
    except Exception:  # reporting an error must not fail on a second one
        return {}


#: SQLSTATE classes that may blame the input: 22 data exception (a malformed
#: cast, an overflow, a division by zero under ANSI mode) and 42 syntax error
#: or access rule violation (a condition that does not parse, an unknown
#: column; the input's only inside a user-input scope, see
#: :func:`translate_spark_error`). Other classes (XX internal, 58 system
#: error, ...) stay failures.
BAD_INPUT_SQLSTATE_CLASSES = frozenset({"22", "42"})

#: How many causes of a JVM exception are searched for a SQLSTATE.
_MAX_CAUSES = 8


#: SQLSTATE class of analysis errors (a name that does not resolve, SQL
#: that does not parse): the user's only inside a user-input scope.
ANALYSIS_SQLSTATE_CLASS = "42"


#: What a Spark error says when the store's connector (S3A, ABFS) gave up on
#: the connection: a reset or timeout its own retries did not cover (the AWS
#: SDK lets a reset while it parses an answer escape as an UncheckedIOException).
STORE_CONNECTION_FAILURES = (
    "java.net.SocketException",
    "java.net.SocketTimeoutException",
    "SdkClientException",
    "AWSClientIOException",
    "Unable to execute HTTP request",
)
#: What Hadoop's output committer says when the connector could not rename a
#: task's output (``Could not rename <attempt> to <task>``, ``Failed to rename
#: <file> to <path>``): inside the write's private staging folder
#: (:data:`STAGING_PREFIX`) only the store can have failed. ABFS on a
#: flat-namespace account copies and deletes each blob, and under lost answers
#: its rename reports failure.
STAGING_RENAME_FAILURES = ("Could not rename", "Failed to rename")


def translate_spark_error(
    exc: BaseException, logical_names: Callable[[], Mapping[str, str]] | None = None
) -> InvalidInputError | InternalError | StorageError | None:
    """``exc`` as the provider's error when it is a Spark error of a known kind; else None.

    - a Spark error whose message names a failed store connection
      (:data:`STORE_CONNECTION_FAILURES`, in ``hadoop`` mode), or a rename in
      the write's staging folder that failed (:data:`STAGING_RENAME_FAILURES`): StorageError,
      which a retried task may not meet (nothing was committed: Spark failed
      before the commit);

    - SQLSTATE class 22 (a data exception: a malformed cast, an overflow, a
      division by zero under ANSI mode): InvalidInputError, the data or the
      user's expression is at fault;
    - class 42 raised while the user's SQL was analysed or ran
      (:func:`~airflow_delta_provider.spark.conditions.user_input`):
      InvalidInputError naming that SQL;
    - class 42 anywhere else: SQL the provider built did not analyse, our
      bug: InternalError. ``logical_names`` gives the table's
      ``{physical: logical}`` names (called only then), and every physical
      name in the message is followed by its logical one.

    Spark errors carry a SQLSTATE: a :class:`pyspark.errors.PySparkException`
    has ``getSqlState()``; a raw py4j ``Py4JJavaError`` (a JVM exception
    PySpark did not convert) is searched down its causes for the first
    exception that has one. The message is the error class and the first
    line of Spark's message, e.g. ``[CAST_INVALID_INPUT] The value 'abc' ...``.
    """
    if type(exc).__module__.split(".")[0] in ("pyspark", "py4j") and _store_failed(str(exc)):
        return StorageError(f"Spark's connector to the store failed: {first_line(str(exc))}")
    found = _spark_error(exc)
    if found is None:
        return None
    state, error_class, message = found
    if state[:2] not in BAD_INPUT_SQLSTATE_CLASSES:
        return None
    first = first_line(message)
    if error_class and not first.startswith(f"[{error_class}]"):
        first = f"[{error_class}] {first}"
    if state[:2] != ANALYSIS_SQLSTATE_CLASS:
        return InvalidInputError(first)
    from airflow_delta_provider.spark.conditions import user_input_of  # imports PySpark: only for a Spark error

    scope = user_input_of(exc)
    if scope is not None:
        what, sql = scope
        return InvalidInputError(f"invalid {what} {sql!r}: {first}")
    from airflow_delta_provider.delta.table_features.column_mapping import with_logical_names

    names = logical_names() if logical_names is not None else {}
    return InternalError(f"Spark could not analyse SQL the provider built: {with_logical_names(first, names)}")


def _store_failed(message: str) -> bool:
    if any(failure in message for failure in STORE_CONNECTION_FAILURES):
        return True
    return STAGING_PREFIX in message and any(failure in message for failure in STAGING_RENAME_FAILURES)


def spark_input_error(exc: BaseException) -> InvalidInputError | None:
    """``exc`` as InvalidInputError when it is a Spark error the input caused
    (:func:`translate_spark_error`); None for anything else, our bugs included."""
    translated = translate_spark_error(exc)
    return translated if isinstance(translated, InvalidInputError) else None


def _spark_error(exc: BaseException) -> tuple[str, str | None, str] | None:
    """(SQLSTATE, error class, message) of a Spark error; None for anything else."""
    try:
        from pyspark.errors import PySparkException
    except ImportError:  # checkpoint runs without pyspark: no Spark error possible
        return None
    if isinstance(exc, PySparkException):
        state = exc.getSqlState()
        if not state:
            return None
        getter = getattr(exc, "getCondition", None) or exc.getErrorClass  # getCondition: Spark 4
        return state, getter(), str(exc)
    try:  # a Spark Connect client may have no py4j (pyspark-client alone): no JVM error then
        from py4j.protocol import Py4JError, Py4JJavaError
    except ImportError:
        return None
    if not isinstance(exc, Py4JJavaError):
        return None
    throwable = exc.java_exception
    for _ in range(_MAX_CAUSES):
        if throwable is None:
            return None
        try:  # SparkThrowable methods; other JVM exceptions lack them
            state = throwable.getSqlState()
            if state:
                return state, throwable.getCondition(), str(throwable.getMessage() or "")
        except Py4JError:
            pass
        throwable = throwable.getCause()
    return None


def _default_session(conf: dict[str, str], debug: bool) -> Any:
    """A session whose Spark log is quiet, or at INFO with ``--debug``."""
    from airflow_delta_provider.spark.runtime.session import get_or_create_session

    return get_or_create_session(conf=conf, debug=debug)


def _fail(exc: BaseException) -> NoReturn:
    """One line on stderr, exit code 2."""
    sys.stdout.flush()
    print(f"{type(exc).__name__}: {one_line(exc)}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_BAD_INPUT)


def _crash(exc: BaseException) -> NoReturn:
    """An unexpected failure: the traceback, then one summary line last; exit code 1.

    The Airflow hook reads the last ``ClassName: message`` line of stderr,
    and a traceback's own last line may span several lines (Spark's
    messages do), so the summary repeats it as one line.
    """
    sys.stdout.flush()
    traceback.print_exception(exc, file=sys.stderr)
    message = first_line(str(exc)) or "(no message)"
    print(f"{type(exc).__name__}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_INTERNAL)


__all__ = [
    "BAD_INPUT_SQLSTATE_CLASSES",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "SPARK_ERROR_LOGGERS",
    "build_parser",
    "execute",
    "main",
    "parse_request",
    "spark_error_records",
    "spark_input_error",
    "translate_spark_error",
]
