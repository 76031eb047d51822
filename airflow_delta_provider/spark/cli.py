"""Command line of the Spark applications (what spark-submit runs).

``python -m airflow_delta_provider.spark <update|delete|append|merge|checkpoint|vacuum|reorg|optimize|alter|restore|changes> TABLE [options]``

``--io auto|hadoop|arrow`` picks how data files are read and written
(:mod:`airflow_delta_provider.spark.runtime.io_mode`); commands that touch no data
file accept it and ignore it.

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
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Callable, Sequence

from airflow_delta_provider.delta.errors import DeltaError, InvalidInputError
from airflow_delta_provider.spark.runtime.io_mode import IO_MODES

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors follow the one-line error convention."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InvalidInputError(f"{self.prog}: {message}")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _column_list(text: str) -> list[str]:
    columns = [c.strip() for c in text.split(",") if c.strip()]
    if not columns:
        raise argparse.ArgumentTypeError(f"expected column names separated by commas, got {text!r}")
    return columns


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m airflow_delta_provider.spark", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("table", help="table path or file:// URI")
    common.add_argument("--token", help="operation token recorded in the commit")
    common.add_argument(
        "--spark-conf", action="append", type=_key_value, default=[], metavar="K=V", help="Spark setting"
    )
    common.add_argument(
        "--io",
        choices=list(IO_MODES),
        default="auto",
        help="data file I/O: Spark's Hadoop filesystem, or pyarrow through the storage layer (default: auto)",
    )
    common.add_argument(
        "--debug", action="store_true", help="also log PySpark's records of Spark errors, with their JVM stacks"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    update = sub.add_parser("update", parents=[common], help="conditional UPDATE")
    update.add_argument("--condition", help="SQL predicate; all rows when absent")
    update.add_argument(
        "--set", dest="set_exprs", action="append", type=_key_value, default=[], metavar="COL=SQL", required=True
    )

    delete = sub.add_parser("delete", parents=[common], help="conditional DELETE")
    delete.add_argument("--condition", required=True, help="SQL predicate")

    append = sub.add_parser("append", parents=[common], help="append (or overwrite) rows from files")
    append.add_argument("--source", required=True, help="path of the data to append")
    append.add_argument("--format", required=True, choices=["parquet", "csv", "json", "delta"])
    append.add_argument("--merge-schema", action="store_true")
    append.add_argument("--partition-by", action="append", default=[], metavar="COL")
    append.add_argument("--mode", choices=["append", "overwrite"], default="append")
    append.add_argument("--overwrite-schema", action="store_true")
    append.add_argument("--txn-app-id")
    append.add_argument("--txn-version", type=int)
    append.add_argument("--option", action="append", type=_key_value, default=[], metavar="K=V")
    append.add_argument(
        "--table-schema",
        metavar="JSON",
        help="Delta schema of a table this creates (or replaces with --overwrite-schema); its field metadata may "
        "declare generated (delta.generationExpression) and identity (delta.identity.*) columns",
    )
    append.add_argument(
        "--property", action="append", type=_key_value, default=[], metavar="K=V", help="table property (delta.*)"
    )

    merge = sub.add_parser("merge", parents=[common], help="MERGE (upsert) a source into the table")
    merge.add_argument("--source", required=True, help="path of the source data")
    merge.add_argument("--source-format", default="parquet", choices=["parquet", "csv", "json", "orc", "delta"])
    merge.add_argument("--source-version", type=int, help="version of a delta source (default: its latest)")
    merge.add_argument("--on", required=True, help='join condition, e.g. "t.id = s.id"')
    merge.add_argument(
        "--clauses",
        required=True,
        help='ordered WHEN clauses as JSON, e.g. [{"when": "matched", "update": "*"}, '
        '{"when": "not_matched", "insert": "*"}]',
    )
    merge.add_argument("--target-alias", default="t")
    merge.add_argument("--source-alias", default="s")
    merge.add_argument("--merge-schema", action="store_true", help="let * clauses add the source's new columns")
    merge.add_argument(
        "--option", action="append", type=_key_value, default=[], metavar="K=V", help="source reader option"
    )

    checkpoint = sub.add_parser("checkpoint", parents=[common], help="checkpoint the latest version")
    checkpoint.add_argument("--cleanup-logs", action="store_true")

    vacuum = sub.add_parser("vacuum", parents=[common], help="delete unreferenced files")
    vacuum.add_argument("--retention-hours", type=float)
    vacuum.add_argument("--dry-run", action="store_true")
    vacuum.add_argument("--no-retention-check", dest="enforce_retention", action="store_false")
    reorg = sub.add_parser("reorg", parents=[common], help="REORG ... APPLY (PURGE) of deletion vectors")
    reorg.add_argument("--purge", action="store_true", required=True, help="rewrite files that carry deletion vectors")
    reorg.add_argument(
        "--min-deleted-ratio", type=float, default=0.0, help="only files whose vector hides more than this share"
    )
    optimize = sub.add_parser("optimize", parents=[common], help="OPTIMIZE: compact small files, or Z-order")
    optimize.add_argument("--where", help="a condition on partition columns: only those partitions")
    optimize.add_argument(
        "--target-size", type=int, help="bytes per file (default: delta.targetFileSize, else 128 MiB)"
    )
    optimize.add_argument(
        "--zorder-by", type=_column_list, default=[], metavar="C1,C2", help="Z-order by these columns"
    )
    restore = sub.add_parser("restore", parents=[common], help="RESTORE the table to an earlier version")
    target = restore.add_mutually_exclusive_group(required=True)
    target.add_argument("--version", type=int, help="the version to restore")
    target.add_argument(
        "--timestamp", help="restore the newest version committed at or before this time (ISO 8601, UTC if no zone)"
    )
    changes = sub.add_parser("changes", parents=[common], help="write the change data feed of a version range")
    changes.add_argument("--start", type=int, required=True, help="the first version whose changes to read")
    changes.add_argument("--end", type=int, help="the last version whose changes to read (default: the latest)")
    changes.add_argument("--output", required=True, help="the folder to write the changed rows to (replaced)")
    changes.add_argument(
        "--output-format", choices=["parquet", "json", "csv", "orc"], default="parquet", help="default: parquet"
    )
    alter = sub.add_parser("alter", parents=[common], help="ALTER TABLE: one schema or property change")
    alter.add_argument(
        "--change",
        required=True,
        help='the change as JSON, e.g. {"rename_column": {"column": "a", "to": "b"}}, {"drop_columns": ["a"]}, '
        '{"add_columns": [{"name": "c", "type": "long"}]}, {"alter_column": {"column": "c", "comment": "..."}}, '
        '{"set_properties": {"k": "v"}}, {"unset_properties": ["k"]}, '
        '{"add_constraint": {"name": "positive", "expression": "amount > 0"}} (checks the rows: needs Spark), '
        '{"drop_constraint": {"name": "positive", "if_exists": true}}',
    )
    alter.add_argument(
        "--enable-column-mapping",
        action="store_true",
        help="turn column mapping on (mode name) in the same commit when RENAME or DROP needs it",
    )
    return parser


def _dispatch(args: argparse.Namespace, spark: Any, storage_options: Mapping[str, str] | None = None) -> Any:
    token = args.token
    opts = storage_options
    if args.command == "update":
        from airflow_delta_provider.spark.commands.update import run_update

        set_exprs = dict(args.set_exprs)
        return run_update(spark, args.table, args.condition, set_exprs, token, io=args.io, storage_options=opts)
    if args.command == "delete":
        from airflow_delta_provider.spark.commands.delete import run_delete

        return run_delete(spark, args.table, args.condition, token, io=args.io, storage_options=opts)
    if args.command == "append":
        from airflow_delta_provider.spark.commands.append import run_append

        return run_append(
            spark,
            args.table,
            args.source,
            format=args.format,
            merge_schema=args.merge_schema,
            partition_by=args.partition_by,
            mode=args.mode,
            overwrite_schema=args.overwrite_schema,
            txn_app_id=args.txn_app_id,
            txn_version=args.txn_version,
            options=dict(args.option),
            token=token,
            io=args.io,
            table_properties=dict(args.property),
            storage_options=opts,
            table_schema=args.table_schema,
        )
    if args.command == "merge":
        from airflow_delta_provider.spark.commands.merge.command import run_merge

        return run_merge(
            spark,
            args.table,
            args.source,
            args.on,
            args.clauses,
            source_format=args.source_format,
            source_version=args.source_version,
            source_options=dict(args.option),
            target_alias=args.target_alias,
            source_alias=args.source_alias,
            merge_schema=args.merge_schema,
            token=token,
            io=args.io,
            storage_options=opts,
        )
    if args.command == "checkpoint":
        from airflow_delta_provider.spark.commands.checkpoint import run_checkpoint

        return run_checkpoint(spark, args.table, args.cleanup_logs, token, storage_options=opts)
    if args.command == "vacuum":
        from airflow_delta_provider.spark.commands.vacuum import run_vacuum

        return run_vacuum(
            spark,
            args.table,
            args.retention_hours,
            args.dry_run,
            args.enforce_retention,
            token,
            storage_options=opts,
        )
    if args.command == "reorg":
        from airflow_delta_provider.spark.commands.reorg import run_reorg_purge

        return run_reorg_purge(spark, args.table, args.min_deleted_ratio, token, io=args.io, storage_options=opts)
    if args.command == "alter":
        from airflow_delta_provider.spark.commands.alter import run_alter

        return run_alter(spark, args.table, args.change, args.enable_column_mapping, token, storage_options=opts)
    if args.command == "optimize":
        from airflow_delta_provider.spark.commands.optimize import run_optimize

        return run_optimize(
            spark, args.table, args.where, args.target_size, args.zorder_by, token, io=args.io, storage_options=opts
        )
    if args.command == "restore":
        from airflow_delta_provider.spark.commands.restore import run_restore

        return run_restore(spark, args.table, args.version, args.timestamp, token, storage_options=opts)
    if args.command == "changes":
        from airflow_delta_provider.spark.commands.changes import run_changes

        return run_changes(
            spark, args.table, args.start, args.end, args.output, args.output_format, io=args.io, storage_options=opts
        )
    raise InvalidInputError(f"unknown command {args.command!r}")


#: Commands that never touch data files, so no JVM is started for them.
NO_SPARK_COMMANDS = frozenset({"checkpoint", "alter", "restore"})
#: Commands that can also run with no Spark at all (``engine="python"``): VACUUM
#: only lists and deletes, which Spark spreads over executors on a local disk.
PYTHON_ENGINE_COMMANDS = NO_SPARK_COMMANDS | {"vacuum"}

#: PySpark's loggers that record every error converted from Spark, with its JVM stack.
SPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def needs_spark(args: argparse.Namespace) -> bool:
    """Whether the parsed command needs a Spark session: all but
    :data:`NO_SPARK_COMMANDS`, and ALTER when it adds a CHECK constraint."""
    if args.command == "alter":
        from airflow_delta_provider.spark.commands.alter import needs_spark as alter_needs_spark

        return alter_needs_spark(args.change)
    return args.command not in NO_SPARK_COMMANDS


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
        args = build_parser().parse_args(argv)
        spark = None
        if needs_spark(args):
            spark = (session_factory or _default_session)(dict(args.spark_conf))
        result = execute(args, spark)
    except DeltaError as exc:
        _fail(exc)
    except Exception as exc:  # noqa: BLE001 - reported, then the process fails
        _crash(exc)
    print(result.to_json(), flush=True)
    return EXIT_OK


def execute(args: argparse.Namespace, spark: Any, storage_options: Mapping[str, str] | None = None) -> Any:
    """Run the parsed command on ``spark`` (None for :data:`NO_SPARK_COMMANDS`).

    Spark errors the input caused become InvalidInputError; PySpark's records
    of them are dropped unless ``args.debug``. ``storage_options`` reach the
    table from this process (default: the environment).
    """
    with spark_error_records(enabled=args.debug or spark is None):
        return _run_translating_spark_errors(args, spark, storage_options)


@contextmanager
def spark_error_records(enabled: bool) -> Iterator[None]:
    """Let PySpark's error records (:data:`SPARK_ERROR_LOGGERS`) through only when ``enabled``.

    PySpark logs each error it converts, with the whole JVM stack, before the
    error even reaches our handling; for bad input that is kilobytes of noise
    around the one line that matters.
    """
    if enabled:
        yield
        return
    from pyspark.logger import PySparkLogger  # the loggers must be PySpark's own kind

    loggers = [PySparkLogger.getLogger(name) for name in SPARK_ERROR_LOGGERS]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, saved):
            logger.disabled = disabled


def _run_translating_spark_errors(
    args: argparse.Namespace, spark: Any, storage_options: Mapping[str, str] | None
) -> Any:
    """Run the command; Spark errors the input caused become InvalidInputError."""
    try:
        return _dispatch(args, spark, storage_options)
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
    first = _first_line(message)
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


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _fail(exc: BaseException) -> None:
    """One line on stderr, exit code 2."""
    sys.stdout.flush()
    print(f"{type(exc).__name__}: {_one_line(str(exc))}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_BAD_INPUT)


def _crash(exc: BaseException) -> None:
    """An unexpected failure: the traceback, then one summary line last; exit code 1.

    The Airflow hook reads the last ``ClassName: message`` line of stderr,
    and a traceback's own last line may span several lines (Spark's
    messages do), so the summary repeats it as one line.
    """
    sys.stdout.flush()
    traceback.print_exception(exc, file=sys.stderr)
    message = _first_line(str(exc)) or "(no message)"
    print(f"{type(exc).__name__}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_INTERNAL)


__all__ = [
    "BAD_INPUT_SQLSTATE_CLASSES",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "NO_SPARK_COMMANDS",
    "needs_spark",
    "PYTHON_ENGINE_COMMANDS",
    "SPARK_ERROR_LOGGERS",
    "build_parser",
    "execute",
    "main",
    "spark_error_records",
    "spark_input_error",
]
