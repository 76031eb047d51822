"""Partition values and data file paths, as delta-spark spells them.

Three encodings meet here, and mixing them up corrupts paths:

1. A partition value is *serialized* to a string for ``add.partitionValues``
   (PROTOCOL.md "Partition Value Serialization"): JSON null for null, ISO UTC
   timestamps, plain decimals.
2. The value is *Hive-escaped* into a directory name, ``col=value`` (Spark's
   ``ExternalCatalogUtils.escapePathName``): ``%XX`` for a fixed set of
   characters, ``__HIVE_DEFAULT_PARTITION__`` for null. Directories are only a
   convention; readers take values from the log, never from the path.
3. The relative file path is *URI-encoded* into ``add.path`` (Hadoop
   ``Path.toUri``), so ``%`` becomes ``%25`` a second time: value ``bar+%21``
   lives in directory ``_2=bar+%2521`` and is logged as ``_2=bar+%252521/...``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import posixpath
import random
import re
import string
import struct
import unicodedata
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage.location import SCHEMES, TableLocation, parse_location

if TYPE_CHECKING:
    from airflow_delta_provider.delta.storage.store import TableStorage

#: Hive's directory name for a null (or empty string) partition value.
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# --- Hive escaping (ExternalCatalogUtils.charToEscape, non-Windows) ----------

_HIVE_ESCAPED = frozenset(chr(c) for c in range(0x01, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def escape_partition_value(s: str) -> str:
    """Escape ``s`` for a directory name exactly as Spark's ``escapePathName``."""
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED else c for c in s)


_JAVA_INT = re.compile(r"[+-]?[0-9A-Fa-f]+")


def unescape_partition_value(s: str) -> str:
    """Inverse of :func:`escape_partition_value`, as Spark's ``unescapePathName``:
    a ``%`` not followed by two characters Java parses as hex stays literal."""
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%" and i + 2 < len(s) and _JAVA_INT.fullmatch(s[i + 1 : i + 3]):
            code = int(s[i + 1 : i + 3], 16)
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def partition_dir(
    partition_columns: Iterable[str],
    values: Mapping[str, str | None],
    types: Mapping[str, str] | None = None,
) -> str:
    """The Hive directory of a file, e.g. ``a=1/b=__HIVE_DEFAULT_PARTITION__``.

    ``values`` are serialized partition values (as in ``add.partitionValues``).
    With ``types`` (column -> Delta type), ISO timestamp values are written in
    the ``yyyy-MM-dd HH:mm:ss[.ffffff]`` form delta-spark uses for directories
    even when it logs ISO values (see golden ``kernel-timestamp-partition-col-ISO8601``).
    """
    parts = []
    for col in partition_columns:
        value = values.get(col)
        if value and types and types.get(col) == "timestamp":
            parsed = parse_partition_value(value, "timestamp")
            value = _spark_timestamp_text(parsed.astimezone(dt.timezone.utc))
        text = escape_partition_value(value) if value else HIVE_DEFAULT_PARTITION
        parts.append(f"{escape_partition_value(col)}={text}")
    return "/".join(parts)


_ALPHANUMERIC = string.digits + string.ascii_uppercase + string.ascii_lowercase


def random_file_prefix(length: int) -> str:
    """A folder name of ``length`` random alphanumeric characters: where a new data file goes
    instead of its partition folder under ``delta.randomizeFilePrefixes`` (delta-spark's
    ``Utils.getRandomPrefix``)."""
    return "".join(random.choice(_ALPHANUMERIC) for _ in range(length))


def _spark_timestamp_text(ts: dt.datetime) -> str:
    """Spark's timestamp-to-string: seconds, then fraction without trailing zeros."""
    text = _datetime_text(ts, " ")[:-7]
    if ts.microsecond:
        text += f".{ts.microsecond:06d}".rstrip("0")
    return text


def _datetime_text(ts: dt.datetime, sep: str) -> str:
    """``yyyy-MM-dd<sep>HH:mm:ss.ffffff`` (strftime does not pad years below 1000)."""
    return f"{ts.year:04d}-{ts.month:02d}-{ts.day:02d}{sep}{ts.hour:02d}:{ts.minute:02d}:{ts.second:02d}.{ts.microsecond:06d}"


# --- URI encoding of add.path (java.net.URI multi-argument constructor) ------

# Characters java.net.URI leaves alone in a path: unreserved, punct, "/" and "@".
_URI_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'():@&=+$,;/")


def _java_quotes_non_ascii(c: str) -> bool:
    # URI.quote escapes non-ASCII only when Character.isSpaceChar or isISOControl.
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") or 0x80 <= ord(c) <= 0x9F


def relative_to_root(table_root: str | TableLocation, add_path: str) -> str | None:
    """The decoded path under ``table_root`` of a file as the log spells it;
    None for a file outside the root.

    Relative log paths are URI-encoded; absolute ones are URIs (``file:/...``,
    ``s3://bucket/...``, any spelling of the root's scheme) or plain absolute
    paths, resolved by :func:`file_location` (decoded once, never re-parsed).
    """
    scheme = urlsplit(add_path).scheme
    if (scheme and len(scheme) > 1) or add_path.startswith("/"):  # one letter: a Windows drive
        root = table_root if isinstance(table_root, TableLocation) else parse_location(table_root)
        try:
            location = file_location(root, add_path)
        except InvalidInputError:  # a scheme no storage reaches: not under the root
            return None
        rel = root.relative(location)
        return posixpath.normpath(rel) if rel is not None else None
    rel = posixpath.normpath(decode_path(add_path))
    return None if rel == ".." or rel.startswith("../") or rel.startswith("/") else rel


def encode_path(relative_path: str) -> str:
    """URI-encode a relative file path as Hadoop ``Path.toUri().toString()``.

    ``%`` becomes ``%25``, space ``%20``, ``#`` ``%23``; ``=``, ``+``, ``:``,
    ``@`` and non-ASCII letters stay as they are, like delta-spark's paths.
    """
    out: list[str] = []
    for c in relative_path:
        if c in _URI_PATH_SAFE or (ord(c) >= 0x80 and not _java_quotes_non_ascii(c)):
            out.append(c)
        else:
            out.extend(f"%{b:02X}" for b in c.encode("utf-8"))
    return "".join(out)


def decode_path(p: str) -> str:
    """Undo the URI encoding of an ``add.path`` (``+`` stays ``+``)."""
    return unquote(p)


def to_absolute(table_root: str, add_path: str) -> str:
    """The decoded absolute location of a data file named by ``add.path``.

    ``add.path`` may be relative to the table root (the normal case), an
    absolute ``file:`` URI (``file:/x``, ``file:///x``), another URI
    (``s3a://b/x``, returned canonical and decoded: ``s3://b/x``), or an absolute path
    (delta-spark canonicalizes these; golden ``canonicalized-paths-*``). A
    ``table_root`` given as a ``file:`` URI is treated as its local path.
    """
    split = urlsplit(add_path)
    if len(split.scheme) > 1:  # one letter would be a Windows drive
        if split.scheme == "file":
            return posixpath.normpath(decode_path(split.path))
        if split.scheme.lower() in SCHEMES:  # the canonical spelling: s3a:// is s3://
            return parse_location(add_path).uri
        return f"{split.scheme}://{split.netloc}{decode_path(split.path)}"
    if add_path.startswith("/"):
        return posixpath.normpath(decode_path(add_path))
    root = table_root
    if root.startswith("file:"):
        root = decode_path(urlsplit(root).path)
    elif "://" in root:  # an object store root: join keys, never normalize the "//"
        rel = posixpath.normpath(decode_path(add_path))
        return f"{root.rstrip('/')}/{rel}"
    return posixpath.normpath(posixpath.join(root, decode_path(add_path)))


def file_location(root: TableLocation, add_path: str) -> TableLocation:
    """The decoded location of the file ``add_path`` names in the log of the
    table at ``root``. An absolute URI is parsed once, from its encoded form
    (its encoding undone once: ``%253A`` is the key's ``%3A``); a relative
    path is decoded and joined to ``root``'s parts. The result is never a
    string parsed again. Raises :class:`InvalidInputError` for a URI of a
    scheme no storage reaches."""
    split = urlsplit(add_path)
    if len(split.scheme) > 1:  # one letter would be a Windows drive
        return parse_location(add_path)
    if add_path.startswith("/"):
        return TableLocation("file", "", posixpath.normpath(decode_path(add_path)))
    rel = posixpath.normpath(decode_path(add_path))
    if root.is_local:
        return TableLocation("file", "", posixpath.normpath(posixpath.join(root.path, rel)))
    return TableLocation(
        root.scheme, root.bucket, f"{root.path}/{rel}" if root.path else rel, root.account, given=root.given
    )


def file_storage(
    storage: TableStorage, add_path: str, storage_options: Mapping[str, Any] | None = None
) -> tuple[TableStorage, str]:
    """Where the file ``add_path`` (as the log of the table at ``storage``
    spells it) is read: the table's storage and the file's decoded path
    under its root, or, for a file outside the root (a shallow clone's), a
    storage opened on the file's folder (locally) or bucket (an object
    store: one client per bucket, reused) and the file's path there: with
    ``storage_options`` if given, else with the table storage's own options
    on the same kind of store (the credentials must reach both)."""
    rel = relative_to_root(storage.location, add_path)
    if rel is not None:
        return storage, rel
    from airflow_delta_provider.delta.storage.store import open_storage

    file = file_location(storage.location, add_path)
    if file.is_local:
        place, rel = file.parent(), file.name
    else:  # the bucket's root and the key: one client per bucket, reused (storage_at caches it)
        place, rel = TableLocation(file.scheme, file.bucket, "", file.account, file.given), file.path
    if storage_options is not None:
        return open_storage(place, storage_options), rel
    return storage.storage_at(place), rel


def absolute_uri(root: TableLocation, add_path: str) -> str:
    """``add.path`` of the table at ``root`` as an absolute, URI-encoded
    location another table's log can name (a shallow clone's adds, as
    delta-spark's ``makePathsAbsolute`` writes them): ``file:/...`` for a
    local file, else in the scheme ``root`` was addressed with
    (:meth:`TableLocation.qualified_uri`: ``s3a://`` or ``s3://`` as given,
    ``gs://``, ``abfss://c@account...``; an Azure root without its account is
    refused). An absolute path stays as it is."""
    split = urlsplit(add_path)
    if len(split.scheme) > 1 or add_path.startswith("/"):
        return add_path if len(split.scheme) > 1 else "file:" + add_path
    rel = posixpath.normpath(decode_path(add_path))
    if rel == ".." or rel.startswith("../"):
        raise InvalidInputError(f"{add_path!r} is not a path under the table root {root.uri}")
    if root.is_local:
        return "file:" + encode_path(root.child(rel))
    scheme, _, rest = root.qualified_uri().partition("://")
    authority, _, prefix = rest.partition("/")
    return f"{scheme}://{authority}/" + encode_path(f"{prefix}/{rel}" if prefix else rel)


# --- Partition value serialization -------------------------------------------

_DECIMAL_TYPE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_INTEGRAL = ("byte", "short", "integer", "long")


def decimal_scale(delta_type: str) -> int | None:
    """The scale of a ``decimal(p,s)`` type, None for any other type."""
    m = _DECIMAL_TYPE.fullmatch(delta_type.strip())
    return int(m.group(2)) if m else None


def to_float32(value: float) -> float:
    """``value`` rounded to the nearest single-precision float, as Spark's FloatType holds it."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:  # beyond float32 range: Java's cast gives infinity
        return math.copysign(math.inf, value)


def _java_float_text(value: float, single: bool) -> str:
    """Java's ``Double.toString`` / ``Float.toString`` (shortest digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if single:
        # Shortest decimal that reads back to the same float32.
        target = struct.pack("<f", value)
        value = struct.unpack("<f", target)[0]
        digits = repr(value)  # replaced below: the loop runs at least once
        for precision in range(1, 10):
            digits = f"{value:.{precision}g}"
            try:
                if struct.pack("<f", float(digits)) == target:
                    break
            except OverflowError:  # rounded past the largest float32 (near 3.4e38)
                continue
        d = Decimal(digits)
    else:
        d = Decimal(repr(value))
    sign, digit_tuple, exponent = d.normalize().as_tuple()
    digits_str = "".join(map(str, digit_tuple))
    point = len(digits_str) + int(exponent)  # position of the decimal point
    text: str
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            text = "0." + "0" * -point + digits_str
        elif point >= len(digits_str):
            text = digits_str + "0" * (point - len(digits_str)) + ".0"
        else:
            text = digits_str[:point] + "." + digits_str[point:]
    else:
        mantissa = digits_str[0] + "." + (digits_str[1:] or "0")
        text = f"{mantissa}E{point - 1}"
    return ("-" if sign else "") + text


def serialize_partition_value(value: Any, delta_type: str) -> str | None:
    """The ``partitionValues`` string of a Python value of a Delta type.

    None and ``""`` give None (Spark stores an empty string as a null
    partition). Timestamps become ISO UTC with microseconds, the form current
    delta-spark writes; a naive ``datetime`` for a ``timestamp`` column is
    taken as UTC. A ``timestamp_ntz`` (a naive ``datetime``) is written as
    Spark casts it to text, ``yyyy-MM-dd HH:mm:ss[.f]`` with no zone, as
    delta-spark logs it. Binary values must be valid UTF-8, as Spark casts
    binary to string by decoding it.
    """
    if value is None or (isinstance(value, str) and value == ""):
        return None
    t = delta_type.strip().lower()
    try:
        if t == "string":
            return str(value)
        if t == "boolean":
            if not isinstance(value, bool):
                raise TypeError
            return "true" if value else "false"
        if t in _INTEGRAL:
            if isinstance(value, bool) or int(value) != value:
                raise TypeError
            return str(int(value))
        if t in ("float", "double"):
            return _java_float_text(float(value), single=t == "float")
        scale = decimal_scale(t)
        if scale is not None:
            d = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
            return format(d.quantize(Decimal(1).scaleb(-scale)), "f")
        if t == "date":
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                raise TypeError
            return value.isoformat()
        if t == "timestamp":
            if not isinstance(value, dt.datetime):
                raise TypeError
            aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            return _datetime_text(aware.astimezone(dt.timezone.utc), "T") + "Z"
        if t == "timestamp_ntz":
            if not isinstance(value, dt.datetime) or value.tzinfo is not None:
                raise TypeError
            return _spark_timestamp_text(value)
        if t == "binary":
            return bytes(value).decode("utf-8")
    except (TypeError, ValueError, InvalidOperation, UnicodeDecodeError) as e:
        raise InvalidInputError(f"{value!r} is not a valid {delta_type} partition value") from e
    raise InvalidInputError(f"a {delta_type} column cannot be a partition column")


def parse_partition_value(s: str | None, delta_type: str) -> Any:
    """The Python value of a ``partitionValues`` string.

    None and ``""`` are null. Timestamps are accepted in both forms the
    protocol allows: legacy ``2021-09-08 11:11:11[.ffffff]`` (read as UTC, as
    delta-rs and delta-kernel-rs do) and ISO ``2021-09-08T11:11:11.000000Z``;
    they come back as aware UTC datetimes. A ``timestamp_ntz`` value must be
    ``yyyy-MM-dd HH:mm:ss[.ffffff]`` without a zone and comes back naive.
    """
    if s is None or s == "":
        return None
    t = delta_type.strip().lower()
    try:
        if t == "string":
            return s
        if t == "boolean":
            low = s.strip().lower()
            if low not in ("true", "false"):
                raise ValueError(s)
            return low == "true"
        if t in _INTEGRAL:
            return int(s)
        if t == "double":
            return float(s)
        if t == "float":
            return to_float32(float(s))
        if decimal_scale(t) is not None:
            return Decimal(s)
        if t == "date":
            return dt.date.fromisoformat(s.strip())
        if t == "timestamp":
            ts = dt.datetime.fromisoformat(s.strip())
            if ts.tzinfo is None:
                ts = ts.replace(tzinfo=dt.timezone.utc)
            return ts.astimezone(dt.timezone.utc)
        if t == "timestamp_ntz":
            return _parse_timestamp_ntz(s)
        if t == "binary":
            return s.encode("utf-8")
    except (ValueError, InvalidOperation) as e:
        raise InvalidInputError(f"{s!r} is not a valid {delta_type} partition value") from e
    raise InvalidInputError(f"cannot parse a partition value of type {delta_type}")


_TIMESTAMP_NTZ_TEXT = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")


def _parse_timestamp_ntz(s: str) -> dt.datetime:
    """A ``timestamp_ntz`` partition value (PROTOCOL.md "Partition Value
    Serialization": ``yyyy-MM-dd HH:mm:ss[.ffffff]``, no zone) as a naive
    datetime. Digits past the microseconds are dropped, as Spark drops them;
    a zone or offset is refused, since the value names no instant. A bare
    ``yyyy-MM-dd`` is midnight: a ``date`` column widened to
    ``timestamp_ntz`` keeps the values its older files were logged with."""
    m = _TIMESTAMP_NTZ_TEXT.fullmatch(s.strip())
    if m is None:
        raise InvalidInputError(
            f"{s!r} is not a valid timestamp_ntz partition value: expected "
            "yyyy-MM-dd HH:mm:ss[.ffffff] with no time zone"
        )
    fraction = int((m[7] or "").ljust(6, "0")[:6])
    try:
        year, month, day, hour, minute, second = (int(g or 0) for g in m.groups()[:6])
        return dt.datetime(year, month, day, hour, minute, second, fraction)
    except ValueError as e:  # a day, hour ... out of range
        raise InvalidInputError(f"{s!r} is not a valid timestamp_ntz partition value: {e}") from None


def _field_types(schema: Mapping[str, Any] | str) -> dict[str, str]:
    """Lower-cased top-level column name -> Delta type (a string for primitives)."""
    parsed: Mapping[str, Any] = json.loads(schema) if isinstance(schema, str) else schema
    return {
        f["name"].lower(): f["type"] if isinstance(f["type"], str) else json.dumps(f["type"])
        for f in parsed.get("fields", ())
    }


def parse_partition_values(
    partition_values: Mapping[str, str | None],
    schema: Mapping[str, Any],
    partition_columns: Iterable[str],
) -> dict[str, Any]:
    """Typed partition values of one file, keyed by partition column name.

    Columns are matched case-insensitively, both in the schema and in
    ``partition_values``; a column absent from ``partition_values`` is null.
    """
    types = _field_types(schema)
    lowered = {k.lower(): v for k, v in partition_values.items()}
    out: dict[str, Any] = {}
    for col in partition_columns:
        delta_type = types.get(col.lower())
        if delta_type is None:
            raise InvalidInputError(f"partition column {col!r} is not in the table schema")
        raw = partition_values[col] if col in partition_values else lowered.get(col.lower())
        out[col] = parse_partition_value(raw, delta_type)
    return out


__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "absolute_uri",
    "decimal_scale",
    "decode_path",
    "encode_path",
    "escape_partition_value",
    "file_location",
    "file_storage",
    "parse_partition_value",
    "parse_partition_values",
    "partition_dir",
    "relative_to_root",
    "serialize_partition_value",
    "to_absolute",
    "to_float32",
    "unescape_partition_value",
]
