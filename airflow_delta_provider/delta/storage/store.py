"""``TableStorage``: every byte the core reads or writes under a table root.

One interface, two backends:

- :class:`LocalStorage` for the local filesystem. Commits are claimed with
  ``os.link`` of a fully written temporary file (a hard link fails with
  ``EEXIST`` when the name is taken), listings skip ``stat`` for names before
  the requested start, and files are replaced by ``rename``.
- :class:`ObjectStorage` for S3 (and S3-compatible endpoints), Azure and
  GCS, on obstore (Python bindings of the Rust ``object_store`` that delta-rs
  uses). Commits use the store's atomic create: S3 and Azure
  ``If-None-Match: *``, GCS ``ifGenerationMatch=0``. A store that ignores it
  is detected by a probe and refused (see :mod:`.options`), never written
  unsafely.

Paths are relative to the table root, ``/``-separated and decoded (the name
on storage, not the URI-encoded form of the log). Missing objects raise
:class:`FileNotFoundError`; a store that cannot be reached or refuses access
raises :class:`~airflow_delta_provider.delta.errors.StorageError` with the
store named and no secret in the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_delta_provider.delta.errors import (
    CommitOutcomeUnknownError,
    StorageAccessDeniedError,
    StorageError,
    StorageNotFoundError,
    UnsafeStorageError,
)
from airflow_delta_provider.delta.storage.location import TableLocation, parse_location
from airflow_delta_provider.delta.storage.options import StoreOptions, split_options
from airflow_delta_provider.delta.storage.renewal import lease_for
from airflow_delta_provider.delta.storage.retry import RetryPolicy, is_transient

if TYPE_CHECKING:
    import pyarrow as pa

#: Objects per request of a bulk delete (S3's DeleteObjects takes 1,000).
DELETE_BATCH = 1000
#: Bulk-delete requests in flight at once.
DELETE_PARALLELISM = 8
#: Creates again after a create whose answer was lost, each read back first (:meth:`ObjectStore._settle`).
_SETTLE_CREATES = 2


@dataclass(frozen=True)
class ObjectMeta:
    """One file (or, on the local filesystem, folder) under the table root."""

    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class TableStorage(ABC):
    """The files under one table root."""

    def __init__(self, location: TableLocation) -> None:
        self.location = location
        self._others: dict[TableLocation, TableStorage] = {}
        self._others_lock = threading.Lock()

    @property
    def root(self) -> str:
        """The canonical table root: an absolute path, or ``scheme://bucket/prefix``."""
        return self.location.uri

    @property
    def is_local(self) -> bool:
        return self.location.is_local

    @property
    def lists_from_offset(self) -> bool:
        """Whether a listing can start after a name on the server (S3
        ``start-after``, GCS ``startOffset``; a local folder is cheap to scan).
        Azure lists every blob from the start."""
        return self.location.scheme != "az"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r})"

    def storage_at(self, location: TableLocation) -> TableStorage:
        """The storage of another location, reached with this storage's options
        when it is on the same kind of store (a shallow clone's files in its
        source's bucket); else with the environment's credential chain.
        Opened once per location for this storage (one client per bucket when
        callers ask for a bucket's root, as ``file_storage`` does), then reused."""
        with self._others_lock:
            found = self._others.get(location)
            if found is None:
                found = self._others[location] = self._open_at(location)
            return found

    def _open_at(self, location: TableLocation) -> TableStorage:
        return open_storage(location)

    # --- listing ---------------------------------------------------------------

    @abstractmethod
    def list_dir(self, folder: str, after: str | None = None) -> list[ObjectMeta]:
        """Files directly inside ``folder`` whose names sort after ``after``, by name.

        One request on an object store (per 1,000 keys); an absent folder is empty.
        """

    @abstractmethod
    def list_top(self, folder: str = "") -> tuple[list[ObjectMeta], list[ObjectMeta]]:
        """(sub-folders, files) directly inside ``folder``: one delimiter listing."""

    @abstractmethod
    def list_tree(self, folder: str) -> list[ObjectMeta]:
        """Everything below ``folder``, recursively (folders too, where they exist)."""

    # --- reading ---------------------------------------------------------------

    @abstractmethod
    def get(self, path: str) -> bytes:
        """The bytes of a file; FileNotFoundError when absent."""

    @abstractmethod
    def head(self, path: str) -> ObjectMeta:
        """Size and modification time of a file; FileNotFoundError when absent."""

    def exists(self, path: str) -> bool:
        try:
            self.head(path)
        except FileNotFoundError:
            return False
        return True

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A pyarrow file to read parquet from (a context manager)."""
        import pyarrow as pa

        return pa.BufferReader(self.get(path))

    def get_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of a file, e.g. a parquet footer."""
        return self.get(path)[start:end]

    # --- writing ---------------------------------------------------------------

    @abstractmethod
    def put(self, path: str, data: bytes) -> None:
        """Write or replace a file whole; readers never see it half-written."""

    @abstractmethod
    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create a file; False when it exists already (another writer won).

        True also when a retried request finds the very bytes it wrote: the
        first attempt landed and only its answer was lost. When the outcome
        cannot be learned, :class:`CommitOutcomeUnknownError`.
        """

    @abstractmethod
    def move(self, source: str, dest: str) -> None:
        """Move a file within the store, replacing ``dest``: a rename on a
        filesystem, a server-side copy then delete on an object store (the
        bytes never pass through this process)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; nothing happens when it is absent."""

    @abstractmethod
    def delete_many(self, paths: Iterable[str]) -> int:
        """Delete files in batches; how many were asked for and are gone."""

    @abstractmethod
    def delete_empty_dir(self, path: str) -> bool:
        """Remove a folder if it is empty. Object stores have no folders: False."""

    # --- async, for triggers ---------------------------------------------------

    async def list_dir_async(self, folder: str, after: str | None = None) -> list[ObjectMeta]:
        return await asyncio.to_thread(self.list_dir, folder, after)

    async def get_async(self, path: str) -> bytes:
        return await asyncio.to_thread(self.get, path)

    async def head_async(self, path: str) -> ObjectMeta:
        return await asyncio.to_thread(self.head, path)


def open_storage(
    uri: str | os.PathLike[str] | TableLocation, storage_options: Mapping[str, Any] | None = None
) -> TableStorage:
    """The storage of the table at ``uri``, configured by ``storage_options``
    over the environment's credential chain."""
    location = uri if isinstance(uri, TableLocation) else parse_location(uri)
    if location.is_local:
        return LocalStorage(location)
    return ObjectStorage(location, split_options(storage_options))


# --- the local filesystem ---------------------------------------------------------


class LocalStorage(TableStorage):
    """A table on the local filesystem (or a mounted one)."""

    def _abs(self, path: str) -> str:
        return self.location.child(path)

    def list_dir(self, folder: str, after: str | None = None) -> list[ObjectMeta]:
        base = self._abs(folder)
        try:
            it = os.scandir(base)
        except (FileNotFoundError, NotADirectoryError):
            return []
        prefix = folder.strip("/")
        out = []
        with it:
            for entry in it:
                name = entry.name
                # Names before ``after`` are skipped unstat'ed: a log of many
                # thousand commits lists in milliseconds.
                if after is not None and name <= after:
                    continue
                try:
                    if not entry.is_file(follow_symlinks=True):
                        continue
                    st = entry.stat()
                except FileNotFoundError:
                    continue  # removed while listing
                out.append(ObjectMeta(f"{prefix}/{name}" if prefix else name, st.st_size, st.st_mtime_ns // 1_000_000))
        out.sort(key=lambda m: m.path)
        return out

    def list_top(self, folder: str = "") -> tuple[list[ObjectMeta], list[ObjectMeta]]:
        dirs: list[ObjectMeta] = []
        files: list[ObjectMeta] = []
        for meta in self._scan(folder):
            (dirs if meta.is_dir else files).append(meta)
        return dirs, files

    def list_tree(self, folder: str) -> list[ObjectMeta]:
        out: list[ObjectMeta] = []
        pending = [folder.strip("/")]
        while pending:
            for meta in self._scan(pending.pop()):
                out.append(meta)
                if meta.is_dir:
                    pending.append(meta.path)
        return out

    def _scan(self, folder: str) -> list[ObjectMeta]:
        folder = folder.strip("/")
        try:
            it = os.scandir(self._abs(folder))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        with it:
            for entry in it:
                rel = f"{folder}/{entry.name}" if folder else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                    is_dir = entry.is_dir(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append(ObjectMeta(rel, 0 if is_dir else st.st_size, st.st_mtime_ns // 1_000_000, is_dir))
        return out

    def get(self, path: str) -> bytes:
        with open(self._abs(path), "rb") as f:
            return f.read()

    def head(self, path: str) -> ObjectMeta:
        st = os.stat(self._abs(path))
        return ObjectMeta(path, st.st_size, st.st_mtime_ns // 1_000_000)

    def exists(self, path: str) -> bool:
        return os.path.isfile(self._abs(path))

    def open_input_file(self, path: str) -> pa.NativeFile:
        import pyarrow as pa

        return pa.OSFile(self._abs(path))

    def put(self, path: str, data: bytes) -> None:
        target = self._abs(path)
        tmp = self._write_temp(target, data)
        os.replace(tmp, target)

    def put_if_absent(self, path: str, data: bytes) -> bool:
        target = self._abs(path)
        tmp = self._write_temp(target, data)
        try:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            return True
        finally:
            _unlink_quietly(tmp)

    @staticmethod
    def _write_temp(target: str, data: bytes) -> str:
        folder, name = os.path.split(target)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            _unlink_quietly(tmp)
            raise
        return tmp

    def move(self, source: str, dest: str) -> None:
        target = self._abs(dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(self._abs(source), target)

    def delete(self, path: str) -> None:
        _unlink_quietly(self._abs(path))
        _unlink_quietly(hadoop_checksum(self._abs(path)))

    def delete_many(self, paths: Iterable[str]) -> int:
        n = 0
        for path in paths:
            try:
                os.remove(self._abs(path))
                n += 1
            except FileNotFoundError:
                pass
            _unlink_quietly(hadoop_checksum(self._abs(path)))
        return n

    def delete_empty_dir(self, path: str) -> bool:
        try:
            os.rmdir(self._abs(path))  # never recursive: a file written meanwhile keeps it
        except OSError:
            return False
        return True


def hadoop_checksum(path: str) -> str:
    """The checksum file Hadoop's local filesystem keeps beside ``path`` (``dir/.name.crc``).

    Spark and delta-spark write one with every local file and delete it with
    the file; a file deleted here takes its checksum along, so none is left
    behind (as VACUUM through delta-spark leaves none)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.crc")


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# --- object stores ------------------------------------------------------------------

#: Stores already shown to honour the atomic create in this process.
_ATOMIC_CREATE_CHECKED: dict[tuple[str, ...], bool] = {}
_URL_QUERY = re.compile(r"\?\S*")


class ObjectStorage(TableStorage):
    """A table on S3, Azure or GCS, through obstore."""

    def __init__(self, location: TableLocation, options: StoreOptions) -> None:
        super().__init__(location)
        self._options = options
        self._store = _make_store(location, options)
        self._retry = RetryPolicy.of(options.retry)
        self._generation = 0  # of the renewed credentials it was built with (:mod:`.renewal`)

    def _live_store(self) -> Any:
        """The obstore client, rebuilt first when the table's lease renewed its credentials
        (:mod:`.renewal`): a request never goes out with credentials about to expire."""
        held = lease_for(self.location)
        if held is not None:
            generation, renewed = held.current()
            if generation > self._generation:
                self._options = replace(self._options, config={**self._options.config, **renewed})
                self._store = _make_store(self.location, self._options)
                self._generation = generation
        return self._store

    def _open_at(self, location: TableLocation) -> TableStorage:
        if location.scheme == self.location.scheme:
            return ObjectStorage(location, self._options)
        return open_storage(location)

    # --- error translation -----------------------------------------------------

    def _error(self, action: str, path: str, exc: BaseException) -> BaseException:
        """The exception to raise for a failed request (FileNotFoundError passes)."""
        import obstore.exceptions as oe

        where = self.location.child(path)
        text = _message(exc)
        if _is_missing_bucket(str(exc)):
            kind = "container" if self.location.scheme == "az" else "bucket"
            return StorageNotFoundError(f"{action} {where}: the {kind} {self.location.bucket!r} does not exist")
        if isinstance(exc, FileNotFoundError):
            return exc
        if isinstance(exc, (oe.PermissionDeniedError, oe.UnauthenticatedError)) or _is_denied(text):
            return StorageAccessDeniedError(f"{action} {where}: access denied; check the store's credentials ({text})")
        return StorageError(f"{action} {where} failed: {text}")

    def _transient(self, exc: BaseException) -> str | None:
        """The message of an error obstore gave up on without retrying (a
        reset, a timeout, a cut-off body; see :mod:`.retry`), else None."""
        text = _message(exc)
        return text if not isinstance(exc, FileNotFoundError) and is_transient(text) else None

    def _call(self, action: str, path: str, fn: Any, *args: Any, idempotent: bool = True, **kwargs: Any) -> Any:
        """``fn(store, ...)``, its errors translated; an idempotent call is
        retried on the errors obstore does not retry itself."""
        try:
            store = self._live_store()
            if not idempotent:
                return fn(store, *args, **kwargs)
            what = f"{action} {self.location.child(path)}"
            return self._retry.call(what, lambda: fn(store, *args, **kwargs), self._transient)
        except Exception as exc:
            raise self._error(action, path, exc) from None

    async def _call_async(self, action: str, path: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        store = await asyncio.to_thread(self._live_store) if lease_for(self.location) else self._store

        async def once() -> Any:
            return await fn(store, *args, **kwargs)

        try:
            return await self._retry.call_async(f"{action} {self.location.child(path)}", once, self._transient)
        except Exception as exc:
            raise self._error(action, path, exc) from None

    # --- listing ---------------------------------------------------------------

    def list_dir(self, folder: str, after: str | None = None) -> list[ObjectMeta]:
        import obstore as obs

        prefix, offset = _dir_prefix(folder, after)
        batches = self._call("listing", folder, _collect, obs.list, prefix, offset=offset)
        out = [meta for batch in batches for meta in _direct_children(batch, prefix, offset)]
        out.sort(key=lambda m: m.path)
        return out

    async def list_dir_async(self, folder: str, after: str | None = None) -> list[ObjectMeta]:
        import obstore as obs

        prefix, offset = _dir_prefix(folder, after)

        async def drain(store: Any) -> list[ObjectMeta]:
            out: list[ObjectMeta] = []
            async for batch in obs.list(store, prefix, offset=offset, chunk_size=1000):
                out.extend(_direct_children(batch, prefix, offset))
            return out

        found: list[ObjectMeta] = await self._call_async("listing", folder, drain)
        found.sort(key=lambda m: m.path)
        return found

    def list_top(self, folder: str = "") -> tuple[list[ObjectMeta], list[ObjectMeta]]:
        import obstore as obs

        prefix = f"{folder.strip('/')}/" if folder.strip("/") else None
        result = self._call("listing", folder, obs.list_with_delimiter, prefix)
        dirs = [ObjectMeta(p.rstrip("/"), 0, 0, True) for p in result["common_prefixes"]]
        return dirs, [_meta(m) for m in result["objects"]]

    def list_tree(self, folder: str) -> list[ObjectMeta]:
        import obstore as obs

        prefix = f"{folder.strip('/')}/" if folder.strip("/") else None
        files = [_meta(m) for batch in self._call("listing", folder, _collect, obs.list, prefix) for m in batch]
        # Object stores have no folders; name each one a key implies, so a
        # planner that walks folders sees the same shape as on a disk.
        base = folder.strip("/")
        dirs: set[str] = set()
        for f in files:
            parent = f.path.rsplit("/", 1)[0] if "/" in f.path else ""
            while parent and parent != base and parent not in dirs:
                dirs.add(parent)
                parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
        return [*files, *(ObjectMeta(d, 0, 0, True) for d in sorted(dirs))]

    # --- reading ---------------------------------------------------------------

    def get(self, path: str) -> bytes:
        import obstore as obs

        data: bytes = self._call("reading", path, lambda store: bytes(obs.get(store, path).bytes()))
        return data

    async def get_async(self, path: str) -> bytes:
        import obstore as obs

        async def read(store: Any) -> bytes:
            result = await obs.get_async(store, path)
            return bytes(await result.bytes_async())

        data: bytes = await self._call_async("reading", path, read)
        return data

    def get_range(self, path: str, start: int, end: int) -> bytes:
        import obstore as obs

        return bytes(self._call("reading", path, obs.get_range, path, start=start, end=end))

    def head(self, path: str) -> ObjectMeta:
        import obstore as obs

        return _meta(self._call("reading", path, obs.head, path))

    async def head_async(self, path: str) -> ObjectMeta:
        import obstore as obs

        return _meta(await self._call_async("reading", path, obs.head_async, path))

    # --- writing ---------------------------------------------------------------

    def put(self, path: str, data: bytes) -> None:
        import obstore as obs

        self._call("writing", path, obs.put, path, data)

    def put_if_absent(self, path: str, data: bytes) -> bool:
        self._check_atomic_create()
        try:
            return self._create(path, data)
        except Exception as exc:
            error = self._error("writing", path, exc)
            if isinstance(error, (StorageNotFoundError, StorageAccessDeniedError)):
                raise error from None  # refused outright: nothing was created
            return self._settle(path, data, error)

    def _settle(self, path: str, data: bytes, error: BaseException) -> bool:
        """After a create whose answer is unknown (a timeout, a dropped
        connection): read the object back. Ours: committed. Another's: lost
        the race. Absent: create it again, which either lands or meets a
        delayed first attempt, and read back after that one too when its
        answer is lost as well. Only a store that cannot be read back leaves
        the outcome unknown; a create the store never applied is a
        :class:`StorageError`, retryable."""
        for attempt in range(1, _SETTLE_CREATES + 2):
            try:
                return self._holds(path, data)
            except FileNotFoundError:
                pass
            except StorageError:
                raise CommitOutcomeUnknownError(
                    f"creating {self.location.child(path)} may or may not have succeeded and the store "
                    f"cannot be read back ({error}); run the operation again: a retried task finds its own "
                    "commit and does not commit twice"
                ) from None
            if attempt > _SETTLE_CREATES:
                break
            try:
                return self._create(path, data)
            except Exception as exc:
                error = self._error("writing", path, exc)
                if isinstance(error, (StorageNotFoundError, StorageAccessDeniedError)):
                    raise error from None
        raise type(error)(f"{error}; tried {_SETTLE_CREATES} more times, and it is not there") from None

    def _create(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data``: True when it now holds them.
        When it exists already, True only if it holds exactly ``data``:
        object_store retries a request whose answer was lost, and the retry
        then meets the object its first attempt created."""
        import obstore as obs
        import obstore.exceptions as oe

        try:
            obs.put(self._live_store(), path, data, mode="create")
            return True
        except oe.AlreadyExistsError:
            return self._holds(path, data)

    def _holds(self, path: str, data: bytes) -> bool:
        """Whether ``path`` holds exactly ``data`` (FileNotFoundError when absent)."""
        return self.get(path) == data

    def _check_atomic_create(self) -> None:
        """Probe, once per process and store, that a second create of one key fails."""
        mode = self._options.atomic_create
        if mode == "trust" or (
            mode == "auto" and not (self.location.scheme == "s3" and self._options.has_custom_endpoint)
        ):
            return
        key = (self.location.scheme, self.location.bucket, repr(sorted(self._options.config.items())))
        if _ATOMIC_CREATE_CHECKED.get(key):
            return
        import obstore as obs
        import obstore.exceptions as oe

        probe = f"_delta_log/.atomic-create-probe-{uuid.uuid4().hex}"
        self._call("writing", probe, obs.put, probe, b"1", mode="create", idempotent=False)
        try:
            obs.put(self._live_store(), probe, b"2", mode="create")
        except oe.AlreadyExistsError:
            _ATOMIC_CREATE_CHECKED[key] = True
            return
        except Exception as exc:
            raise self._error("probing the atomic create of", probe, exc) from None
        finally:
            with contextlib.suppress(Exception):
                obs.delete(self._store, probe)
        raise UnsafeStorageError(
            f"the store behind {self.root} does not honour an atomic create (a second "
            "PUT with If-None-Match: * of the same key succeeded), so two writers could both "
            "commit one version and one commit would be lost. No commit is made. Use a store that "
            "supports conditional writes; set delta_atomic_create=trust only if the probe is wrong"
        )

    def move(self, source: str, dest: str) -> None:
        import obstore as obs

        self._call("moving", source, obs.rename, source, dest, idempotent=False)

    def delete(self, path: str) -> None:
        import obstore as obs

        with contextlib.suppress(FileNotFoundError):
            self._call("deleting", path, obs.delete, path)

    def delete_many(self, paths: Iterable[str]) -> int:
        import obstore as obs

        paths = list(paths)
        batches = [paths[i : i + DELETE_BATCH] for i in range(0, len(paths), DELETE_BATCH)]

        def delete(batch: list[str]) -> None:
            try:
                self._call("deleting", batch[0], obs.delete, batch)
            except FileNotFoundError:
                # Azure and GCS fail a batch on one missing key (S3 does not):
                # the rest of the batch goes one by one.
                for path in batch:
                    self.delete(path)

        if len(batches) <= 1:
            for batch in batches:
                delete(batch)
        else:  # obstore releases the GIL: batches run side by side
            with ThreadPoolExecutor(max_workers=min(DELETE_PARALLELISM, len(batches))) as pool:
                list(pool.map(delete, batches))
        return len(paths)

    def delete_empty_dir(self, path: str) -> bool:
        return False


def _make_store(location: TableLocation, options: StoreOptions) -> Any:
    import obstore.exceptions as oe
    from obstore.store import AzureStore, GCSStore, S3Store

    kwargs: dict[str, Any] = {
        "prefix": location.path or None,
        "config": dict(options.config) or None,
        "client_options": dict(options.client) or None,
        "retry_config": dict(options.retry) or None,
    }
    try:
        if location.scheme == "s3":
            return S3Store(location.bucket, **kwargs)
        if location.scheme == "az":
            if location.account and not any("account_name" in k.lower() for k in options.config):
                kwargs["config"] = {**(kwargs["config"] or {}), "azure_storage_account_name": location.account}
            return AzureStore(location.bucket, **kwargs)
        return GCSStore(location.bucket, **kwargs)
    except oe.UnknownConfigurationKeyError as exc:
        from airflow_delta_provider.delta.errors import InvalidInputError

        raise InvalidInputError(f"storage options for {location.uri}: {_message(exc)}") from None
    except Exception as exc:
        raise StorageError(f"cannot open {location.uri}: {_message(exc)}") from None


def _collect(store: Any, list_fn: Any, prefix: str | None, offset: str | None = None) -> list[list[dict[str, Any]]]:
    """Every batch of a listing; a stream fails lazily, so it is drained here."""
    return list(list_fn(store, prefix, offset=offset, chunk_size=1000))


def _dir_prefix(folder: str, after: str | None) -> tuple[str, str | None]:
    prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
    return prefix, (prefix + after if after is not None else None)


def _direct_children(batch: list[dict[str, Any]], prefix: str, offset: str | None) -> list[ObjectMeta]:
    out = []
    for m in batch:
        if "/" in m["path"][len(prefix) :]:
            continue  # below a sub-folder (e.g. _delta_log/_sidecars/)
        if offset is not None and m["path"] <= offset:
            continue  # stores without a server-side offset (Azure) list from the start
        out.append(_meta(m))
    return out


def _meta(m: Mapping[str, Any]) -> ObjectMeta:
    modified = m.get("last_modified")
    mtime = int(modified.timestamp() * 1000) if modified is not None else 0
    return ObjectMeta(str(m["path"]), int(m.get("size") or 0), mtime)


def _message(exc: BaseException) -> str:
    """The first line of an error, with URL query strings (SAS tokens) cut."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _URL_QUERY.sub("?<redacted>", text)[:500]


def _is_missing_bucket(text: str) -> bool:
    return any(s in text for s in ("NoSuchBucket", "ContainerNotFound", "The specified bucket does not exist"))


def _is_denied(text: str) -> bool:
    return any(
        s in text
        for s in (
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AccessDenied",
            "AuthenticationFailed",
            "AuthorizationFailure",
            "403 Forbidden",
            "401 Unauthorized",
        )
    )


__all__ = ["DELETE_BATCH", "LocalStorage", "ObjectMeta", "ObjectStorage", "TableStorage", "open_storage"]
