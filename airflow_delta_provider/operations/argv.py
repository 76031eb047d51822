"""argparse for the requests: one subcommand per request class, generated
from its fields, and argv parsed back into the request.

The caller picks the parser class (the Spark CLI's turns usage errors into
its one-line error convention); nothing here knows about Spark.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from airflow_delta_provider.operations.registry import SPECS
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.spec.fields import argument_of

#: The argparse attribute that names the operation.
COMMAND = "command"


def build_parser(
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
    prog: str = "python -m airflow_delta_provider.spark",
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A parser with one subcommand per :data:`~.operations.SPECS` entry."""
    parser = parser_class(prog=prog, description=description)
    sub = parser.add_subparsers(dest=COMMAND, required=True, parser_class=parser_class)
    for operation, request_class in SPECS.items():
        command = sub.add_parser(operation, help=request_class.summary)
        _add_fields(command, request_class)
    return parser


def request_from_namespace(namespace: argparse.Namespace) -> OperationSpec:
    """The request a parsed command line describes."""
    parsed = vars(namespace)
    return SPECS[parsed[COMMAND]].from_arguments(parsed)


def parse_request(argv: Sequence[str], parser: argparse.ArgumentParser | None = None) -> OperationSpec:
    """``argv`` (``[operation, table, *options]``) as its request."""
    return request_from_namespace((parser or build_parser()).parse_args(list(argv)))


def _add_fields(command: argparse.ArgumentParser, request_class: type[OperationSpec]) -> None:
    group = command.add_mutually_exclusive_group(required=True) if request_class.exactly_one_of else None
    table, *common = request_class.common_fields()
    for field in (table, *request_class.operation_fields(), *common):  # --help lists the operation's own first
        target = group if group is not None and field.name in request_class.exactly_one_of else command
        argument_of(field).add_to(target, field)


__all__ = ["COMMAND", "build_parser", "parse_request", "request_from_namespace"]
