"""Where a table lives: one parsed, canonical form of every table URI.

A table may be named several ways: ``s3a://b/t`` by Spark and ``s3://b/t``
by the core, ``abfss://c@acct.dfs.core.windows.net/t`` or ``az://c/t``, a
plain path or a ``file://`` URI. :func:`parse_location` turns each into a
:class:`TableLocation`, whose :attr:`~TableLocation.uri` is the one spelling
the core uses, so that every name of one table compares equal.

Pure string work: no I/O, no imports beyond the standard library.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from airflow_delta_provider.delta.errors import InvalidInputError

#: Accepted schemes, each mapped to the core's canonical one.
SCHEMES: dict[str, str] = {
    "file": "file",
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gs",
    "gcs": "gs",
    "az": "az",
    "azure": "az",
    "abfs": "az",
    "abfss": "az",
}

_AZURE_HOST_SUFFIXES = (".dfs.core.windows.net", ".blob.core.windows.net")


@dataclass(frozen=True)
class TableLocation:
    """A table root.

    :param scheme: ``file``, ``s3``, ``az`` or ``gs``.
    :param bucket: The bucket (S3, GCS) or container (Azure); empty for ``file``.
    :param path: Local: the absolute path. Object stores: the key prefix,
        without leading or trailing ``/`` (empty for a bucket's root).
    :param account: The Azure storage account, when the URI names it
        (``abfss://container@account.dfs.core.windows.net/...``).
    :param given: The scheme the URI was written with (``s3a``, ``abfss``,
        ...; empty when built from parts). Not part of the identity: every
        spelling of one root compares equal.
    """

    scheme: str
    bucket: str
    path: str
    account: str | None = None
    given: str = field(default="", compare=False, repr=False)

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def uri(self) -> str:
        """The canonical name: the absolute path locally, else ``scheme://bucket/path``."""
        if self.is_local:
            return self.path
        return f"{self.scheme}://{self.bucket}/{self.path}" if self.path else f"{self.scheme}://{self.bucket}"

    def child(self, rel: str) -> str:
        """The canonical name of ``rel`` (decoded, ``/``-separated) under this root."""
        rel = rel.lstrip("/")
        if self.is_local:
            return posixpath.join(self.path, rel) if self.path != "/" else "/" + rel
        return f"{self.uri}/{rel}" if rel else self.uri

    def spark_uri(self) -> str:
        """How Spark's Hadoop filesystems name this root (``s3a://``, ``abfss://``
        or ``abfs://`` if so given, ``gs://``)."""
        if self.is_local:
            return self.path
        if self.scheme == "s3":
            base = f"s3a://{self.bucket}"
        elif self.scheme == "az":
            base = self._abfs_root(f"{self.uri}: Spark's ABFS filesystem needs the storage account")
        else:
            base = f"{self.scheme}://{self.bucket}"
        return f"{base}/{self.path}" if self.path else base

    def qualified_uri(self) -> str:
        """The root as another engine's log can name it, in the scheme it was
        addressed with, as delta-spark's shallow clone qualifies its source
        (``s3a://`` stays ``s3a://``, ``s3://`` stays ``s3://``; Azure is
        ``abfss://c@account.dfs.core.windows.net``, or ``abfs://`` if so
        given; GCS is ``gs://``). Not encoded. Raises
        :class:`InvalidInputError` for an Azure root without its account,
        which no other engine could read."""
        if self.is_local:
            return self.path
        if self.scheme == "s3":
            base = f"{self.given if self.given in ('s3', 's3a', 's3n') else 's3'}://{self.bucket}"
        elif self.scheme == "az":
            base = self._abfs_root(f"{self.uri} names no storage account, so no other engine could read a path into it")
        else:
            base = f"gs://{self.bucket}"
        return f"{base}/{self.path}" if self.path else base

    def _abfs_root(self, without_account: str) -> str:
        """``abfss://c@account.dfs.core.windows.net``, or ``abfs://`` (plain
        HTTP when the cluster allows it, as for an emulator) if so given.
        An Azure root without its account is an :class:`InvalidInputError`
        starting with ``without_account``."""
        if not self.account:
            raise InvalidInputError(
                f"{without_account}; name it as abfss://<container>@<account>.dfs.core.windows.net/<path>"
            )
        scheme = "abfs" if self.given == "abfs" else "abfss"
        return f"{scheme}://{self.bucket}@{self.account}.dfs.core.windows.net"

    def relative(self, location: str | TableLocation) -> str | None:
        """``location`` (any accepted spelling, URI-encoded, or an already
        decoded :class:`TableLocation`, never parsed again) relative to this
        root, decoded; None when it lies outside the root."""
        if isinstance(location, TableLocation):
            other = location
        else:
            try:
                other = parse_location(location)
            except InvalidInputError:
                return None
        if (other.scheme, other.bucket) != (self.scheme, self.bucket):
            return None
        if self.account and other.account and self.account != other.account:
            return None
        root = self.path.rstrip("/")
        target = other.path
        if not root or root == "/":
            rel = target.lstrip("/")
        elif target.startswith(root + "/"):
            rel = target[len(root) + 1 :]
        else:
            return None
        return rel or None

    def parent(self) -> TableLocation:
        """The folder holding this location (a file's), built from the decoded
        parts: never parsed again, so a ``%`` in a key stays a ``%``."""
        head = self.path.rpartition("/")[0]
        path = (head or "/") if self.is_local else head
        return TableLocation(self.scheme, self.bucket, path, self.account, self.given)

    @property
    def name(self) -> str:
        """The last segment of the path (a file's name), decoded."""
        return self.path.rpartition("/")[2]

    def __str__(self) -> str:
        return self.uri


def parse_location(uri: str | os.PathLike[str]) -> TableLocation:
    """The :class:`TableLocation` of a table path or URI.

    Raises :class:`InvalidInputError` for an empty value, an unknown scheme
    or a URI without a bucket.
    """
    text = os.fspath(uri).strip()
    if not text:
        raise InvalidInputError("table path is empty")
    split = urlsplit(text)
    scheme = split.scheme.lower()
    if scheme == "" or len(scheme) == 1:  # a one-letter scheme is a Windows drive
        return TableLocation("file", "", _local_path(text))
    canonical = SCHEMES.get(scheme)
    if canonical is None:
        raise InvalidInputError(
            f"unsupported storage scheme {split.scheme!r} in {text!r}; expected a local path or one of "
            + ", ".join(f"{s}://" for s in SCHEMES)
        )
    if canonical == "file":
        if split.netloc not in ("", "localhost"):
            raise InvalidInputError(f"{text!r}: file URIs must name a local path (file:///...)")
        return TableLocation("file", "", _local_path(unquote(split.path) or "/"))
    netloc = split.netloc
    account = None
    if canonical == "az" and "@" in netloc:
        netloc, _, host = netloc.partition("@")
        account = _azure_account(host, text)
    if not netloc:
        raise InvalidInputError(f"{text!r} names no bucket or container")
    path = posixpath.normpath(unquote(split.path)).strip("/") if split.path.strip("/") else ""
    if path in (".", ".."):
        path = ""
    return TableLocation(canonical, netloc, path, account, given=scheme)


def _local_path(text: str) -> str:
    return os.path.abspath(os.path.expanduser(text)).rstrip("/") or "/"


def _azure_account(host: str, text: str) -> str:
    host = host.lower()
    for suffix in _AZURE_HOST_SUFFIXES:
        if host.endswith(suffix):
            return host[: -len(suffix)]
    raise InvalidInputError(f"{text!r}: expected <container>@<account>.dfs.core.windows.net")


__all__ = ["SCHEMES", "TableLocation", "parse_location"]
