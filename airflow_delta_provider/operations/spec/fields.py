"""One spec field, described once: its command-line form and its operator argument.

A spec field carries an :class:`Argument` in its dataclass metadata: its
kind (a value, a switch, a repeated option, ...), its flag, its help text and
how its text becomes a value; and, for the operator generated from the spec,
whether it is templated, how Airflow's UI renders it, and how an operator's
value (a mapping, a list, the text a template rendered) becomes the field's
(:meth:`Argument.from_operator`). The argv writer (:mod:`.base`) reads it, it
adds itself to the argparse parser (:meth:`Argument.add_to`, called by
:mod:`..argv`), and the operators read it (``operators/delta.py``), so a
field is described once.

The builders (:func:`option`, :func:`switch`, ...) return ``dataclasses.field``
objects with the right default: ``None`` for an optional value, ``False``
for a switch, ``()`` for a repeated option, none at all when required.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: The dataclass metadata key that holds a field's :class:`Argument`.
ARGUMENT = "argument"

# Kinds of argument.
POSITIONAL = "positional"  #: one word, in place: the table
VALUE = "value"  #: ``--flag VALUE``; left out when None
SWITCH = "switch"  #: ``--flag`` when True
NEGATED_SWITCH = "negated switch"  #: ``--flag`` when False (``--no-...``)
REPEATED = "repeated"  #: ``--flag A --flag B``: a tuple of strings
PAIRS = "pairs"  #: ``--flag K=V`` repeated: a tuple of (key, value)
JOINED = "joined"  #: ``--flag A,B``: a tuple of strings, one comma-separated word

_MISSING: Any = dataclasses.MISSING


class _Unset:
    """No operator default of its own: the operator takes the field's."""

    def __repr__(self) -> str:
        return "UNSET"


#: :attr:`Argument.operator_default` when the operator's default is the field's.
UNSET: Any = _Unset()


@dataclass(frozen=True)
class Argument:
    """The command-line form of one request field."""

    kind: str
    help: str | None = None
    #: The option's flag; default ``--`` and the field name with dashes.
    flag: str | None = None
    #: Text to value (argparse's ``type``) for VALUE fields.
    parse: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    required: bool = False
    metavar: str | None = None
    #: The argparse attribute, when it is not the field's name (kept as the CLI always named it).
    dest: str | None = None
    #: Other flags that set a fixed value, e.g. ``(("--lite", "lite"),)`` for ``--mode lite``;
    #: the argv writer uses the alias for that value, and nothing for the default.
    aliases: tuple[tuple[str, Any], ...] = ()
    #: Whether the operator renders it as a Jinja template (its ``template_fields``).
    templated: bool = False
    #: How Airflow's UI shows the rendered value (``template_fields_renderers``): ``sql``, ``json``.
    renderer: str | None = None
    #: Whether the operators take it as a keyword argument (False: the command line's alone).
    in_operator: bool = True
    #: The operator's default, when it differs from the field's (an operator fills what the CLI makes explicit).
    operator_default: Any = UNSET
    #: Text holding JSON: an operator may pass the object itself, which is dumped.
    json_text: bool = False
    #: How an operator's value becomes the field's, when the kind's rule does not fit.
    coerce: Callable[[Any], Any] | None = None

    def from_operator(self, name: str, value: Any) -> Any:
        """The field's value from an operator's (rendered) argument.

        Mappings become ``K=V`` pairs, lists and comma-separated text become
        names, a number's text (what a template renders) becomes the number,
        and an object given for JSON text is dumped. ValueError names the argument.
        """
        if self.coerce is not None:
            return self.coerce(value)
        kind = self.kind
        if kind in (SWITCH, NEGATED_SWITCH):
            return bool(value)
        if kind == PAIRS:
            items = value.items() if isinstance(value, Mapping) else (value or ())
            return tuple((str(key), str(item)) for key, item in items)
        if kind == JOINED:
            names = value.split(",") if isinstance(value, str) else list(value or ())
            return tuple(str(n).strip() for n in names if str(n).strip())
        if kind == REPEATED:
            return (str(value),) if isinstance(value, str) else tuple(str(item) for item in value or ())
        if value is None:
            return None
        if self.parse in (int, float):
            return None if value == "" else number(value, name, self.parse)
        if self.json_text and not isinstance(value, str):
            return json.dumps(value if isinstance(value, (list, tuple)) else dict(value))
        return value if isinstance(value, str) else str(value)

    def flag_for(self, name: str) -> str:
        return self.flag or "--" + name.replace("_", "-")

    def add_to(self, target: Any, field: dataclasses.Field[Any]) -> None:
        """Add ``field`` to an argparse parser (or group) in this form."""
        if self.kind == POSITIONAL:
            target.add_argument(field.name, metavar=self.metavar or "TABLE", help=self.help)
            return
        names = [self.flag_for(field.name)]
        common: dict[str, Any] = {"dest": self.dest or field.name, "help": self.help}
        if self.required:
            common["required"] = True
        kind = self.kind
        if kind == SWITCH:
            target.add_argument(*names, action="store_true", **common)
        elif kind == NEGATED_SWITCH:
            target.add_argument(*names, action="store_false", **common)
        elif kind == REPEATED:
            target.add_argument(*names, action="append", default=[], metavar=self.metavar, **common)
        elif kind == PAIRS:
            target.add_argument(*names, action="append", type=_key_value, default=[], metavar=self.metavar, **common)
        elif kind == JOINED:
            target.add_argument(*names, type=_column_list, default=[], metavar=self.metavar, **common)
        else:
            default = None if field.default is dataclasses.MISSING else field.default
            target.add_argument(
                *names, type=self.parse, choices=self.choices, default=default, metavar=self.metavar,
                **common,
            )  # fmt: skip
            for alias, value in self.aliases:
                target.add_argument(
                    alias, dest=common["dest"], action="store_const", const=value, help=f"{names[0]} {value}"
                )


def argument_of(field: dataclasses.Field[Any]) -> Argument:
    """The field's :class:`Argument`; TypeError for a field without one."""
    try:
        return field.metadata[ARGUMENT]
    except KeyError:
        raise TypeError(f"request field {field.name!r} has no command-line argument") from None


def _field(argument: Argument, default: Any = _MISSING) -> Any:
    return dataclasses.field(default=default, metadata={ARGUMENT: argument})


def positional(*, help: str, **operator: Any) -> Any:
    """A required word in place (the table)."""
    return _field(Argument(POSITIONAL, help=help, **operator))


def option(
    default: Any = None,
    *,
    help: str | None = None,
    flag: str | None = None,
    parse: Callable[[str], Any] = str,
    choices: tuple[str, ...] | None = None,
    required: bool = False,
    metavar: str | None = None,
    dest: str | None = None,
    aliases: tuple[tuple[str, Any], ...] = (),
    **operator: Any,
) -> Any:
    """``--flag VALUE``: required (no default), or optional (written only when not None).

    ``operator`` holds the operator's side: ``templated``, ``renderer``, ``json_text``, ...
    """
    argument = Argument(
        VALUE, help=help, flag=flag, parse=parse, choices=choices, required=required, metavar=metavar,
        dest=dest, aliases=aliases, **operator,
    )  # fmt: skip
    return _field(argument, _MISSING if required else default)


def switch(
    *,
    help: str | None = None,
    flag: str | None = None,
    required: bool = False,
    **operator: Any,
) -> Any:
    """``--flag``: True when given. A required switch (always given) defaults to True."""
    argument = Argument(SWITCH, help=help, flag=flag, required=required, **operator)
    return _field(argument, required)


def negated_switch(*, flag: str, help: str | None = None, **operator: Any) -> Any:
    """``--no-...``: the field is True unless the flag is given."""
    return _field(Argument(NEGATED_SWITCH, help=help, flag=flag, **operator), True)


def repeated(*, help: str | None = None, flag: str | None = None, metavar: str | None = None, **operator: Any) -> Any:
    """``--flag A --flag B``: a tuple of strings, default empty."""
    return _field(Argument(REPEATED, help=help, flag=flag, metavar=metavar, **operator), ())


def pairs(
    *,
    help: str | None = None,
    flag: str | None = None,
    metavar: str = "K=V",
    required: bool = False,
    dest: str | None = None,
    **operator: Any,
) -> Any:
    """``--flag K=V`` repeated: a tuple of (key, value) pairs, in order."""
    argument = Argument(PAIRS, help=help, flag=flag, metavar=metavar, required=required, dest=dest, **operator)
    return _field(argument, _MISSING if required else ())


def joined(*, help: str | None = None, flag: str | None = None, metavar: str | None = None, **operator: Any) -> Any:
    """``--flag A,B``: a tuple of names written as one comma-separated word, default empty."""
    return _field(Argument(JOINED, help=help, flag=flag, metavar=metavar, **operator), ())


def number(value: Any, name: str, kind: Callable[[Any], Any] = int) -> Any:
    """``value`` (a number, or the text a template rendered) as ``kind``; None stays None.

    A value rendered as ``"20240101"`` works, and ``"yesterday"`` fails with the
    argument's name (a ValueError, which a task turns into a failure without retries).
    """
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return kind(value.strip())
        if isinstance(value, bool) or (kind is int and isinstance(value, float) and not value.is_integer()):
            raise TypeError(value)
        return kind(value)
    except (TypeError, ValueError):
        what = "an integer" if kind is int else "a number"
        if name.endswith("version"):
            what = "a version number"
        raise ValueError(f"{name} must be {what}, not {value!r}") from None


def number_text(value: float) -> str:
    """A number as the command line spells it: ``0`` and ``48`` for whole floats, else ``repr``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def split_columns(text: str) -> tuple[str, ...]:
    """``"a, b"`` -> ``("a", "b")``: comma-separated names, blanks dropped."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _column_list(text: str) -> list[str]:
    columns = list(split_columns(text))
    if not columns:
        raise argparse.ArgumentTypeError(f"expected column names separated by commas, got {text!r}")
    return columns


__all__ = [
    "ARGUMENT",
    "JOINED",
    "NEGATED_SWITCH",
    "PAIRS",
    "POSITIONAL",
    "REPEATED",
    "SWITCH",
    "UNSET",
    "VALUE",
    "Argument",
    "argument_of",
    "joined",
    "negated_switch",
    "number",
    "number_text",
    "option",
    "pairs",
    "positional",
    "repeated",
    "split_columns",
    "switch",
]
