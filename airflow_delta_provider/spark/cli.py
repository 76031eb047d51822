"""Command line of the Spark applications (what spark-submit runs).

``python -m airflow_delta_provider.spark <operation> TABLE [options]``: the
operations and their options are the request dataclasses of
:mod:`airflow_delta_provider.requests`, which generate this parser; each
request runs the command :mod:`~airflow_delta_provider.operations.runners`
maps its type to.

``--io`` (one of :data:`~airflow_delta_provider.IO_MODES`) picks how
data files are read and written (:mod:`airflow_delta_provider.spark.runtime.io_mode`);
commands that touch no data file accept it and ignore it.

The last stdout line is the result as one JSON object
(``{"table","operation","version","metrics"}``, plus ``"files"`` for a dry-run
vacuum). Bad input (Spark errors of SQLSTATE class 22 or 42 included),
unsupported tables and conflicts exit with code 2 and one line on stderr,
``ClassName: message``; the table is left unchanged. Any other failure exits
with code 1: the traceback, then one ``ClassName: message`` line, last.

PySpark logs every error it converts from the JVM with the whole JVM stack
(its ``SQLQueryContextLogger``, one JSON line of kilobytes). Those records are
dropped unless ``--debug`` is given: bad input is reported by its one line, and
a crash by its traceback.
"""

from __future__ import annotations

import argparse
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from airflow_delta_provider.delta.errors import DeltaError, InvalidInputError, first_line
from airflow_delta_provider.operations import argv as argv_codec
from airflow_delta_provider.operations.runners import run_spec
from airflow_delta_provider.operations.spec.base import OperationSpec
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
    """
    try:
        request = parse_request(argv)
        spark = None
        if request.needs_spark():
            spark = (session_factory or _default_session)(dict(request.spark_conf))
        result = execute(request, spark, report_progress=_print_progress)
    except DeltaError as exc:
        _fail(exc)
    except Exception as exc:
        _crash(exc)
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
    """Run the command; Spark errors the input caused become InvalidInputError."""
    try:
        return run_spec(spark, request, storage_options)
    except DeltaError:
        raise
    except Exception as exc:
        translated = spark_input_error(exc)
        if translated is None:
            raise
        raise translated from exc


#: SQLSTATE classes that blame the input: 22 data exception (a malformed
#: cast, an overflow, a division by zero under ANSI mode) and 42 syntax error
#: or access rule violation (a condition that does not parse, an unknown
#: column). Other classes (XX internal, 58 system error, ...) stay failures.
BAD_INPUT_SQLSTATE_CLASSES = frozenset({"22", "42"})

#: How many causes of a JVM exception are searched for a SQLSTATE.
_MAX_CAUSES = 8


def spark_input_error(exc: BaseException) -> InvalidInputError | None:
    """``exc`` as InvalidInputError when it is a Spark error the input caused.

    Spark errors carry a SQLSTATE: a :class:`pyspark.errors.PySparkException`
    has ``getSqlState()``; a raw py4j ``Py4JJavaError`` (a JVM exception
    PySpark did not convert) is searched down its causes for the first
    exception that has one. The message is the error class and the first
    line of Spark's message, e.g. ``[CAST_INVALID_INPUT] The value 'abc' ...``.
    """
    found = _spark_error(exc)
    if found is None:
        return None
    state, error_class, message = found
    if state[:2] not in BAD_INPUT_SQLSTATE_CLASSES:
        return None
    first = first_line(message)
    if error_class and not first.startswith(f"[{error_class}]"):
        first = f"[{error_class}] {first}"
    return InvalidInputError(first)


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


def _default_session(conf: dict[str, str]) -> Any:
    from airflow_delta_provider.spark.runtime.session import get_or_create_session

    return get_or_create_session(conf=conf)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines) if lines else ""


def _fail(exc: BaseException) -> NoReturn:
    """One line on stderr, exit code 2."""
    sys.stdout.flush()
    print(f"{type(exc).__name__}: {_one_line(str(exc))}", file=sys.stderr, flush=True)
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
]
