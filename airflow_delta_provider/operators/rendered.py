"""Operator arguments as their templates render them: text to the value it names."""

from __future__ import annotations

from typing import Any


def number(value: Any, name: str, kind: type[int | float] = int) -> Any:
    """``value`` (a number, or the text a template rendered) as ``kind``; None stays None.

    Every numeric argument goes through here, templated or not, so a value
    rendered as ``"20240101"`` works and ``"yesterday"`` fails the task with
    the argument's name (a ValueError, which the task turns into a failure
    without retries)."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return kind(value.strip())
        if isinstance(value, bool) or (kind is int and isinstance(value, float) and not value.is_integer()):
            raise TypeError(value)
        return kind(value)
    except (TypeError, ValueError):
        what = {int: "an integer", float: "a number"}[kind]
        if name.endswith("version"):
            what = "a version number"
        raise ValueError(f"{name} must be {what}, not {value!r}") from None
