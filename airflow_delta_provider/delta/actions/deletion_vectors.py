"""Deletion vectors: from a ``deletionVector`` descriptor to the deleted row indexes.

PROTOCOL.md "Deletion Vectors" and "Deletion Vector Format". A descriptor
names its bitmap in one of three ways (``storageType``):

- ``u``: a file in the table root, ``<prefix>/deletion_vector_<uuid>.bin``,
  where ``pathOrInlineDv`` is an optional random prefix followed by the
  UUID's 16 bytes in Z85 (20 characters);
- ``p``: a file at an absolute path (spelled like ``add.path``);
- ``i``: inline, the bitmap bytes themselves in Z85.

A DV file is a version byte (1) and then, for each vector it holds (one
descriptor's ``offset`` points at it), a big-endian int32 size, that many
bytes of bitmap and a big-endian CRC-32 of them. The bitmap bytes are
delta-spark's ``RoaringBitmapArray`` in its portable format: a little-endian
magic number, 1681511377, then the 64-bit "portable" Roaring layout (a bucket
count, and per bucket its high 32 bits and a 32-bit Roaring bitmap), which
is what CRoaring's 64-bit bitmap reads, through ``pyroaring.BitMap64``.

Files are read through the table's :class:`TableStorage`, never the local
filesystem directly. Every damage (missing file, wrong size, bad CRC, unknown
magic, a bitmap that does not parse or whose cardinality is not the
descriptor's) is a :class:`CorruptDeletionVectorError` naming the DV file.
"""

from __future__ import annotations

import base64
import posixpath
import struct
import uuid
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.actions.model import DeletionVector
from airflow_delta_provider.delta.errors import CorruptDeletionVectorError, InvalidInputError
from airflow_delta_provider.delta.partitions import encode_path, file_storage, to_absolute
from airflow_delta_provider.delta.storage import TableStorage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyroaring import BitMap64

#: ``RoaringBitmapArray``'s portable serialization (little-endian int32 in front).
PORTABLE_MAGIC = 1681511377
#: The first byte of a DV file.
FILE_FORMAT_VERSION = 1
#: Characters of a Z85-encoded UUID at the end of a ``u`` descriptor's path.
UUID_Z85_LENGTH = 20
DV_FILE_PREFIX = "deletion_vector_"
DV_FILE_SUFFIX = ".bin"
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

# --- Z85 -------------------------------------------------------------------------

#: ZeroMQ RFC 32's alphabet, in digit order.
Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#: ``base64.b85decode``'s alphabet (RFC 1924), in digit order: same arithmetic, other characters.
_B85_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_Z85_TO_B85 = str.maketrans(Z85_ALPHABET, _B85_ALPHABET)
_Z85_CHARS = frozenset(Z85_ALPHABET)


def z85_decode(text: str) -> bytes:
    """The bytes of a Z85 string (a multiple of 5 characters; 4 bytes per 5).

    Z85 and the stdlib's base85 are the same base-85 big-endian arithmetic
    over different alphabets, so the text is mapped digit for digit and
    decoded by :func:`base64.b85decode` (Python 3.13's ``z85decode`` does the
    same). Raises :class:`ValueError` for a bad length or character.
    """
    if len(text) % 5:
        raise ValueError(f"Z85 text must be a multiple of 5 characters long, got {len(text)}")
    bad = set(text) - _Z85_CHARS
    if bad:
        raise ValueError(f"not Z85 characters: {''.join(sorted(bad))!r}")
    return base64.b85decode(text.translate(_Z85_TO_B85))


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data`` (a multiple of 4 bytes long), the inverse of :func:`z85_decode`."""
    if len(data) % 4:
        raise ValueError(f"Z85 encodes a multiple of 4 bytes, got {len(data)}")
    return base64.b85encode(data).decode("ascii").translate(_B85_TO_Z85)


_B85_TO_Z85 = str.maketrans(_B85_ALPHABET, Z85_ALPHABET)


# --- where a vector lives -----------------------------------------------------------


def dv_file_name(file_id: uuid.UUID) -> str:
    return f"{DV_FILE_PREFIX}{file_id}{DV_FILE_SUFFIX}"


def relative_dv_path(dv: DeletionVector) -> str:
    """The table-relative path of a ``u`` descriptor's file: ``[<prefix>/]deletion_vector_<uuid>.bin``."""
    if dv.storage_type != "u":
        raise InvalidInputError(f"deletion vector of storage type {dv.storage_type!r} has no relative path")
    encoded = dv.path_or_inline_dv
    if len(encoded) < UUID_Z85_LENGTH:
        raise CorruptDeletionVectorError(
            f"deletion vector path {encoded!r} is shorter than a Z85 UUID ({UUID_Z85_LENGTH} characters)"
        )
    prefix, tail = encoded[:-UUID_Z85_LENGTH], encoded[-UUID_Z85_LENGTH:]
    try:
        file_id = uuid.UUID(bytes=z85_decode(tail))
    except ValueError as exc:
        raise CorruptDeletionVectorError(f"deletion vector path {encoded!r} does not end in a Z85 UUID: {exc}") from exc
    name = dv_file_name(file_id)
    return posixpath.join(prefix, name) if prefix else name


def dv_location(dv: DeletionVector, table_root: str) -> str | None:
    """The decoded absolute location of the DV's file; None for an inline vector."""
    if dv.storage_type == "i":
        return None
    if dv.storage_type == "u":
        return to_absolute(table_root, relative_dv_path(dv))
    if dv.storage_type == "p":
        return to_absolute(table_root, dv.path_or_inline_dv)
    raise CorruptDeletionVectorError(f"unknown deletion vector storage type {dv.storage_type!r}")


# --- reading ----------------------------------------------------------------------


class DeletionVectorReader:
    """Reads deletion vectors of one table, each DV file fetched once.

    ``storage`` is the table's storage; a ``p`` vector outside the table
    root is read through a storage opened on its folder with
    ``storage_options`` (the environment's credential chain by default).
    """

    def __init__(self, storage: TableStorage, storage_options: Mapping[str, Any] | None = None) -> None:
        self.storage = storage
        self._storage_options = storage_options
        self._files: dict[str, bytes] = {}

    def read(self, dv: DeletionVector, data_file: str | None = None) -> BitMap64:
        """The deleted row indexes of one vector. ``data_file`` (the add's
        path) only names the file in error messages."""
        where = _describe(dv, self.storage.root, data_file)
        if dv.storage_type == "i":
            try:
                raw = z85_decode(dv.path_or_inline_dv)
            except ValueError as exc:
                raise CorruptDeletionVectorError(f"{where}: inline data is not Z85: {exc}") from exc
            if len(raw) < dv.size_in_bytes:
                raise CorruptDeletionVectorError(
                    f"{where}: inline data holds {len(raw)} bytes, the descriptor says {dv.size_in_bytes}"
                )
            bitmap = _parse_bitmap(raw[: dv.size_in_bytes], where)
        else:
            bitmap = _parse_bitmap(_frame(self._file(_log_path(dv), where), dv, where), where)
        if len(bitmap) != dv.cardinality:
            raise CorruptDeletionVectorError(
                f"{where}: the bitmap holds {len(bitmap)} rows, the descriptor's cardinality is {dv.cardinality}"
            )
        return bitmap

    def clear(self) -> None:
        """Forget the DV files read so far."""
        self._files.clear()

    def _file(self, path: str, where: str) -> bytes:
        data = self._files.get(path)
        if data is None:
            data = self._files[path] = self._fetch(path, where)
        return data

    def _fetch(self, path: str, where: str) -> bytes:
        """The DV file ``path`` (as the log spells it: URI-encoded), in the
        table's storage or, for an absolute path elsewhere (a shallow
        clone's), in a storage on its folder; decoded once, never twice."""
        storage, rel = file_storage(self.storage, path, self._storage_options)
        try:
            return storage.get(rel)
        except FileNotFoundError as exc:
            raise CorruptDeletionVectorError(f"{where}: the file does not exist") from exc


def _log_path(dv: DeletionVector) -> str:
    """The DV file's path as a log would spell an add's: URI-encoded, relative
    (``u``) or absolute (``p``)."""
    if dv.storage_type == "u":
        return encode_path(relative_dv_path(dv))
    if dv.storage_type == "p":
        return dv.path_or_inline_dv
    raise CorruptDeletionVectorError(f"unknown deletion vector storage type {dv.storage_type!r}")


def read_deletion_vector(storage: TableStorage, dv: DeletionVector, data_file: str | None = None) -> BitMap64:
    """The deleted row indexes of ``dv``, a descriptor of the table at ``storage``."""
    return DeletionVectorReader(storage).read(dv, data_file)


def row_indexes(bitmap: BitMap64) -> pa.Array:
    """A bitmap's row indexes as a sorted arrow ``uint64`` array (no copy per row)."""
    import pyarrow as pa

    values = bitmap.to_array()
    return pa.Array.from_buffers(pa.uint64(), len(values), [None, pa.py_buffer(values)])


def deleted_row_indexes(storage: TableStorage, dv: DeletionVector, data_file: str | None = None) -> pa.Array:
    """:func:`read_deletion_vector` as a sorted arrow ``uint64`` array."""
    return row_indexes(read_deletion_vector(storage, dv, data_file))


# --- writing ------------------------------------------------------------------------


def serialize_bitmap(bitmap: BitMap64) -> bytes:
    """A bitmap in the portable ``RoaringBitmapArray`` form: the magic number
    (little-endian), then the 64-bit portable Roaring layout."""
    bitmap = bitmap.copy()
    bitmap.run_optimize()
    return PORTABLE_MAGIC.to_bytes(4, "little") + bitmap.serialize()


def inline_vector(bitmap: BitMap64) -> DeletionVector:
    """An inline (``i``) descriptor holding ``bitmap``: its bytes in Z85,
    zero-padded to a multiple of 4 bytes (``sizeInBytes`` gives the length)."""
    payload = serialize_bitmap(bitmap)
    padded = payload + bytes(-len(payload) % 4)
    return DeletionVector(
        storage_type="i",
        path_or_inline_dv=z85_encode(padded),
        size_in_bytes=len(payload),
        cardinality=len(bitmap),
    )


class DeletionVectorFile:
    """The deletion vectors one commit writes, framed into one file,
    ``deletion_vector_<uuid>.bin`` in the table root, as delta-spark writes
    them: the format version byte, then per vector its big-endian size, its
    bytes and their big-endian CRC-32. :meth:`add` returns the ``u``
    descriptor of each vector; :attr:`path` is where :meth:`data` must be put.
    """

    def __init__(self) -> None:
        self.file_id = uuid.uuid4()
        self._parts: list[bytes] = [bytes([FILE_FORMAT_VERSION])]
        self._size = 1

    @property
    def path(self) -> str:
        return dv_file_name(self.file_id)

    def __len__(self) -> int:
        return len(self._parts) - 1

    def add(self, bitmap: BitMap64) -> DeletionVector:
        payload = serialize_bitmap(bitmap)
        offset = self._size
        frame = _INT32.pack(len(payload)) + payload + _UINT32.pack(zlib.crc32(payload))
        self._parts.append(frame)
        self._size += len(frame)
        return DeletionVector(
            storage_type="u",
            path_or_inline_dv=z85_encode(self.file_id.bytes),
            size_in_bytes=len(payload),
            cardinality=len(bitmap),
            offset=offset,
        )

    def data(self) -> bytes:
        return b"".join(self._parts)


# --- the bytes ----------------------------------------------------------------------


def _describe(dv: DeletionVector, table_root: str, data_file: str | None) -> str:
    owner = f" of {data_file}" if data_file else ""
    if dv.storage_type == "i":
        return f"inline deletion vector{owner}"
    try:
        location = dv_location(dv, table_root)
    except CorruptDeletionVectorError as exc:
        raise CorruptDeletionVectorError(f"deletion vector{owner}: {exc}") from exc
    return f"deletion vector{owner} in {location}" + (f" at offset {dv.offset}" if dv.offset is not None else "")


def _frame(data: bytes, dv: DeletionVector, where: str) -> bytes:
    """One vector's bitmap bytes out of a DV file, its size and CRC-32 checked."""
    if not data:
        raise CorruptDeletionVectorError(f"{where}: the file is empty")
    if data[0] != FILE_FORMAT_VERSION:
        raise CorruptDeletionVectorError(
            f"{where}: unknown DV file format version {data[0]} (expected {FILE_FORMAT_VERSION})"
        )
    start = dv.offset if dv.offset is not None else 1
    end = start + 4 + dv.size_in_bytes + 4
    if start < 1 or end > len(data):
        raise CorruptDeletionVectorError(
            f"{where}: the vector ({dv.size_in_bytes} bytes at offset {start}) lies past the end of the "
            f"file ({len(data)} bytes)"
        )
    (size,) = _INT32.unpack_from(data, start)
    if size != dv.size_in_bytes:
        raise CorruptDeletionVectorError(
            f"{where}: the file says the vector is {size} bytes, the descriptor says {dv.size_in_bytes}"
        )
    payload = data[start + 4 : start + 4 + size]
    (checksum,) = _UINT32.unpack_from(data, start + 4 + size)
    if zlib.crc32(payload) != checksum:
        raise CorruptDeletionVectorError(
            f"{where}: CRC-32 mismatch (stored {checksum:#010x}, computed {zlib.crc32(payload):#010x})"
        )
    return payload


def _parse_bitmap(payload: bytes, where: str) -> BitMap64:
    if len(payload) < 4:
        raise CorruptDeletionVectorError(f"{where}: {len(payload)} bytes cannot hold a bitmap")
    magic = int.from_bytes(payload[:4], "little")
    if magic != PORTABLE_MAGIC:
        raise CorruptDeletionVectorError(
            f"{where}: unknown bitmap magic number {magic} (expected {PORTABLE_MAGIC}, the portable "
            "RoaringBitmapArray format)"
        )
    from pyroaring import BitMap64  # imported here: locating DV files (VACUUM) needs no bitmaps

    try:
        return BitMap64.deserialize(payload[4:])
    except (ValueError, IndexError) as exc:
        raise CorruptDeletionVectorError(f"{where}: the bitmap cannot be decoded ({exc})") from exc


__all__ = [
    "DV_FILE_PREFIX",
    "PORTABLE_MAGIC",
    "Z85_ALPHABET",
    "DeletionVectorFile",
    "DeletionVectorReader",
    "deleted_row_indexes",
    "dv_file_name",
    "dv_location",
    "read_deletion_vector",
    "relative_dv_path",
    "row_indexes",
    "serialize_bitmap",
    "z85_decode",
    "z85_encode",
]
