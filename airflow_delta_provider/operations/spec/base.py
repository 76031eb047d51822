"""The base of every spec: the table, the options every operation takes,
and the round trip between a spec and its argv.

``spec.to_argv()`` is what the Spark application is started with; the
application's parser (:mod:`..argv`) reads it back into an equal spec.
Both follow the fields' :class:`~.fields.Argument` metadata, in the order the
fields are declared: the table, the operation's own options, then the common
ones (``--io``, ``--debug``, ``--spark-conf``, ``--token``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from airflow_delta_provider.delta.catalog.reference import is_catalog_reference
from airflow_delta_provider.delta.errors import InvalidArgumentError
from airflow_delta_provider.operations.spec.fields import (
    JOINED,
    NEGATED_SWITCH,
    PAIRS,
    POSITIONAL,
    REPEATED,
    SWITCH,
    argument_of,
    number_text,
    option,
    pairs,
    positional,
    switch,
)
from airflow_delta_provider.spark.runtime.io_modes import IO_MODES

#: An old argument name: the field it became, and how its value becomes the field's (None: as it is).
Renamed = tuple[str, "Callable[[Any], Any] | None"]


class _SpecType(type):
    """Lets a spec be built with the names its fields had before they took the
    operators' public names, with a DeprecationWarning naming the new one."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        renamed: Mapping[str, Renamed] = getattr(cls, "renamed", {})
        for old in [name for name in kwargs if name in renamed]:
            new, convert = renamed[old]
            warnings.warn(f"{cls.__name__}: {old!r} is deprecated; use {new!r}", DeprecationWarning, stacklevel=2)
            value = kwargs.pop(old)
            kwargs[new] = value if convert is None else convert(value)
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True, kw_only=True)
class OperationSpec(metaclass=_SpecType):
    """One operation on one table, as the Spark application receives it.

    Subclasses add the operation's own fields and set :attr:`operation`.
    Repeated options are tuples, ``K=V`` options tuples of pairs, so a
    request is immutable and hashable.
    """

    #: The Spark CLI command (``python -m airflow_delta_provider.spark <operation>``).
    operation: ClassVar[str]
    #: One line for the command's ``--help``.
    summary: ClassVar[str]
    #: Whether the core can do it with no Spark at all (``engine="python"``).
    runs_without_spark: ClassVar[bool] = False
    #: Fields of which exactly one is given (a required, mutually exclusive group).
    exactly_one_of: ClassVar[tuple[str, ...]] = ()
    #: Old argument names still accepted, with a DeprecationWarning (:class:`_SpecType`).
    renamed: ClassVar[Mapping[str, Renamed]] = {"table": ("table_path", None)}
    #: Whether it only reads the table (a catalog then vends read-only credentials).
    reads_only: ClassVar[bool] = False
    #: Whether it may create the table: a catalog name with no entry yet is then
    #: registered after the first commit (``location`` says where the table goes).
    creates_table: ClassVar[bool] = False

    table_path: str = positional(
        templated=True,
        help="table path, or its file://, s3://, abfss://, az:// or gs:// URI, or its name in a catalog: "
        "uc://catalog.schema.table, glue://database.table or hms://database.table",
    )
    io: str = option(
        "auto",
        choices=IO_MODES,
        help="data file I/O: Spark's Hadoop filesystem, or pyarrow through the storage layer (default: auto)",
    )
    debug: bool = switch(help="also log PySpark's records of Spark errors, with their JVM stacks")
    spark_conf: tuple[tuple[str, str], ...] = pairs(in_operator=False, help="Spark setting")
    token: str | None = option(in_operator=False, help="operation token recorded in the commit")

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the arguments: the one place where they are checked.

        Runs when the spec is built, so a bad argument never reaches a
        runner; subclasses add their own rules and call ``super().validate()``.
        Raises :class:`~airflow_delta_provider.delta.errors.InvalidArgumentError`.
        """
        for field in dataclasses.fields(self):
            choices = argument_of(field).choices
            value = getattr(self, field.name)
            if choices is not None and value is not None and value not in choices:
                raise InvalidArgumentError(f"{self.operation}: {field.name} must be one of {choices}, not {value!r}")
        location = getattr(self, "location", None)
        if location is not None and not is_catalog_reference(self.table_path) and location != self.table_path:
            # (a spec bound to its catalog entry carries its location as both)
            raise InvalidArgumentError(f"{self.operation}: location is for a table named in a catalog, not a path")
        if self.exactly_one_of:
            given = [name for name in self.exactly_one_of if getattr(self, name) is not None]
            if len(given) != 1:
                raise InvalidArgumentError(f"{self.operation} needs exactly one of {', '.join(self.exactly_one_of)}")

    def needs_spark(self) -> bool:
        """Whether the Spark application opens a session for it (all but metadata-only operations)."""
        return True

    def requires_spark(self) -> bool:
        """Whether it cannot run at all with no Spark (``engine="python"``): every
        operation but those the core runs alone (:attr:`runs_without_spark`)."""
        return not self.runs_without_spark

    def spark_reason(self) -> str:
        """Why it needs Spark, for the error that refuses it with no Spark."""
        return self.operation

    def idempotent_txn(self) -> tuple[str, int] | None:
        """The protocol ``txn`` (app id, version) this write records, when it
        records one: a table that has seen it skips the write."""
        return None

    # --- argv ---------------------------------------------------------------

    @classmethod
    def common_fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The fields every operation has (declared here), in order."""
        return dataclasses.fields(OperationSpec)

    @classmethod
    def operation_fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        """This operation's own fields, in order."""
        common = {f.name for f in cls.common_fields()}
        return tuple(f for f in dataclasses.fields(cls) if f.name not in common)

    def to_argv(self) -> list[str]:
        """The Spark application's arguments: ``[operation, table, *arguments(), "--token", token]``.

        That is also what a hook's ``run(operation, table, arguments, token)`` builds.
        """
        token = [] if self.token is None else ["--token", self.token]
        return [self.operation, self.table_path, *self.arguments(), *token]

    def arguments(self) -> list[str]:
        """The arguments after the table, without the token: :meth:`operation_arguments`, then
        ``--io``, ``--debug`` and ``--spark-conf``."""
        common = [f for f in self.common_fields() if argument_of(f).kind != POSITIONAL and f.name != "token"]
        return [*self.operation_arguments(), *self._words(common)]

    def operation_arguments(self) -> list[str]:
        """This operation's own options."""
        return self._words(self.operation_fields())

    def _words(self, fields: Any) -> list[str]:
        words: list[str] = []
        for field in fields:
            words += _field_words(field, getattr(self, field.name))
        return words

    @classmethod
    def from_arguments(cls, parsed: Mapping[str, Any]) -> OperationSpec:
        """The request from argparse's attributes (``vars(namespace)``)."""
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            argument = argument_of(field)
            value = parsed[argument.dest or field.name]
            if argument.kind == PAIRS:
                value = tuple((k, v) for k, v in value)
            elif argument.kind in (REPEATED, JOINED):
                value = tuple(value)
            values[field.name] = value
        return cls(**values)


def catalog_location() -> Any:
    """The ``location`` field of an operation that may create a table named in a
    catalog: where the new table goes (default: its schema's storage root and its name)."""
    return option(
        templated=True,
        metavar="URI",
        help="where a table named in a catalog (uc://, glue://, hms://) that does not exist yet is created "
        "(default: a folder named after the table under its schema's or database's storage root)",
    )


def _field_words(field: dataclasses.Field[Any], value: Any) -> list[str]:
    argument = argument_of(field)
    flag = argument.flag_for(field.name)
    kind = argument.kind
    if kind == POSITIONAL:
        return [str(value)]
    if kind == SWITCH:
        return [flag] if value else []
    if kind == NEGATED_SWITCH:
        return [] if value else [flag]
    if kind == REPEATED:
        return [word for item in value for word in (flag, str(item))]
    if kind == PAIRS:
        return [word for key, item in value for word in (flag, f"{key}={item}")]
    if kind == JOINED:
        return [flag, ",".join(value)] if value else []
    if value is None:
        return []
    if argument.aliases:
        if value == field.default:
            return []
        for alias, const in argument.aliases:
            if value == const:
                return [alias]
    text = number_text(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
    return [flag, text]


__all__ = ["OperationSpec", "catalog_location"]
