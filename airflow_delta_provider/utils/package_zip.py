"""The zip that spark-submit ships in ``--py-files``.

Executors (and a cluster-mode driver) need the Spark commands and the Delta
core, nothing Airflow-side. So the zip holds only
``airflow_delta_provider/__init__.py`` plus the ``delta``, ``operations`` and
``spark`` subpackages. It is built once per package version and source fingerprint, in
a per-user cache folder, and written atomically so concurrent tasks on one
worker never read a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import airflow_delta_provider

#: The subpackages an executor imports.
SHIPPED_SUBPACKAGES = ("delta", "operations", "spark")


def package_root() -> Path:
    """The folder of the installed ``airflow_delta_provider`` package."""
    return Path(airflow_delta_provider.__file__).resolve().parent


def _shipped_files(root: Path) -> list[Path]:
    files = [root / "__init__.py"]
    for sub in SHIPPED_SUBPACKAGES:
        files.extend(sorted(p for p in (root / sub).rglob("*.py") if "__pycache__" not in p.parts))
    return files


def _fingerprint(root: Path, files: list[Path]) -> str:
    # Size and mtime of every shipped file: cheap, and it catches an edited
    # editable install whose version string did not move.
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/airflow-delta-provider`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "airflow-delta-provider"


def build_package_zip(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of the py-files zip, building it if this version lacks one."""
    root = package_root()
    files = _shipped_files(root)
    target_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    name = f"airflow_delta_provider-{airflow_delta_provider.__version__}-{_fingerprint(root, files)}.zip"
    target = target_dir / name
    if target.is_file():
        return target

    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".building-", suffix=".zip", dir=target_dir)
    try:
        with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, arcname=f"airflow_delta_provider/{path.relative_to(root).as_posix()}")
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
