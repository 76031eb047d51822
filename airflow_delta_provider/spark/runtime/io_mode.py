"""How the Spark engine reads and writes data files: ``hadoop`` or ``arrow``.

- ``hadoop``: Spark's own parquet reader and writer, through the Hadoop
  FileSystem of the table's scheme (the cluster's ``hadoop-aws`` for
  ``s3a://``, the GCS connector, ABFS; the local filesystem always has one).
- ``arrow``: the executors' Python workers read and write parquet with
  pyarrow through the core's storage seam (obstore), so no connector jar is
  needed (:mod:`.arrow_scan`, :mod:`.arrow_write`).
- ``auto``: ``hadoop`` when Spark has a FileSystem for the scheme, else ``arrow``.

In ``hadoop`` mode on an object store, the connector is given the same
credentials the core uses (:mod:`.hadoop_store_conf`).
"""

from __future__ import annotations

import re
from typing import Any

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.storage import TableLocation, parse_location
from airflow_delta_provider.spark.runtime.io_modes import ARROW, HADOOP, IO_MODES


def check_io(io: str) -> str:
    """``io`` when it names a mode; InvalidInputError otherwise."""
    if io not in IO_MODES:
        raise InvalidInputError(f"unknown io mode {io!r}; use one of {', '.join(IO_MODES)}")
    return io


def resolve_io(spark: Any, location: TableLocation | str, io: str = "auto") -> str:
    """The mode (``hadoop`` or ``arrow``) for data files under ``location``.

    An explicit ``hadoop`` on a store Spark has no FileSystem for is an
    InvalidInputError raised here, before anything is read or written.
    """
    check_io(io)
    if isinstance(location, str):
        location = parse_location(location)
    if io == ARROW:
        return ARROW
    if location.is_local:
        return HADOOP
    from airflow_delta_provider.spark.runtime.session import is_connect  # pyspark: not for the commands without Spark

    try:
        scheme = location.spark_uri().split("://", 1)[0]
    except InvalidInputError:
        if io == HADOOP:
            raise
        return ARROW  # Spark's filesystems cannot name it (az:// without the account); pyarrow can
    if is_connect(spark):
        available = _server_filesystem_available(spark, location)
    else:
        available = hadoop_filesystem_available(spark, scheme)
    if io == HADOOP and not available:
        raise InvalidInputError(
            f"io=hadoop needs a Hadoop FileSystem for {scheme}:// in Spark (the connector jar, e.g. "
            f"hadoop-aws for s3a://), and this Spark has none; use io=arrow (or auto) for {location.uri}"
        )
    if not available:
        return ARROW
    from airflow_delta_provider.spark.runtime.hadoop_store_conf import apply_hadoop_store_settings

    apply_hadoop_store_settings(spark, location)  # the connector gets the credentials the core uses
    return HADOOP


def hadoop_filesystem_available(spark: Any, scheme: str) -> bool:
    """Whether Spark's JVM can load a Hadoop FileSystem class for ``scheme``.

    Asks Hadoop itself (``FileSystem.getFileSystemClass``, which honours
    ``fs.<scheme>.impl`` and the FileSystems on the classpath) with the
    session's Hadoop configuration. A session without a JVM here (Spark
    Connect) is asked with :func:`_server_filesystem_available` instead.
    """
    from py4j.protocol import Py4JError

    try:
        jvm = spark.sparkContext._jvm
        conf = spark._jsparkSession.sessionState().newHadoopConf()
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)
    except (Py4JError, AttributeError):  # UnsupportedFileSystemException, ClassNotFoundException; no JVM
        return False
    return True


#: What Hadoop says when it has no FileSystem for a scheme: none configured, or
#: one configured whose class is not on the classpath (``fs.s3a.impl`` without
#: hadoop-aws: ``Configuration.getClass``'s "Class ...FileSystem not found").
_NO_FILESYSTEM = re.compile(
    r"UnsupportedFileSystemException|No FileSystem for scheme|ClassNotFoundException: Class \S*FileSystem not found"
)
#: A path under the table that never exists: resolving it only asks whether the filesystem loads.
_PROBE_PATH = "_delta_log/_airflow_delta_filesystem_probe"


def _server_filesystem_available(spark: Any, location: TableLocation) -> bool:
    """Over Spark Connect: whether the server's Spark has a Hadoop FileSystem for ``location``.

    The server resolves a read of a path under the table that does not
    exist: a missing FileSystem fails with Hadoop's
    ``UnsupportedFileSystemException`` or, for a scheme Hadoop configures but
    whose jar is missing (``s3a://`` without hadoop-aws), a
    ``ClassNotFoundException``; any other answer (path not found, access
    denied) means the filesystem loaded. One metadata request at most.
    """
    probe = f"{location.spark_uri().rstrip('/')}/{_PROBE_PATH}"
    try:
        spark.read.format("text").load(probe).schema  # noqa: B018 - resolving the path is the probe
    except Exception as exc:
        return _NO_FILESYSTEM.search(str(exc)) is None
    return True


__all__ = ["ARROW", "HADOOP", "IO_MODES", "check_io", "hadoop_filesystem_available", "resolve_io"]
