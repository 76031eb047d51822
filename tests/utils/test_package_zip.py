"""The --py-files zip: what it holds, that it is built once, and that it imports."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from airflow_delta_provider.utils.package_zip import build_package_zip, package_root


def test_zip_holds_the_core_and_the_spark_commands_only(tmp_path: Path) -> None:
    names = zipfile.ZipFile(build_package_zip(tmp_path)).namelist()
    assert "airflow_delta_provider/__init__.py" in names
    assert "airflow_delta_provider/delta/actions/model.py" in names
    assert any(n.startswith("airflow_delta_provider/spark/") for n in names)
    assert not [n for n in names if n.split("/")[1] in ("hooks", "operators", "sensors", "triggers")]
    assert not [n for n in names if "__pycache__" in n or not n.endswith(".py")]
    expected = {
        f"airflow_delta_provider/{p.relative_to(package_root()).as_posix()}"
        for sub in ("delta", "requests", "spark")
        for p in (package_root() / sub).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert expected <= set(names)


def test_zip_is_built_once_and_rebuilt_when_a_shipped_file_changes(tmp_path: Path) -> None:
    first = build_package_zip(tmp_path)
    stamp = first.stat().st_mtime_ns
    assert build_package_zip(tmp_path) == first
    assert first.stat().st_mtime_ns == stamp
    assert len(list(tmp_path.iterdir())) == 1  # no leftover temporary file

    errors = package_root() / "delta" / "errors.py"
    original = errors.stat()
    try:
        os.utime(errors, ns=(original.st_atime_ns, original.st_mtime_ns + 1_000_000_000))
        assert build_package_zip(tmp_path) != first
    finally:
        os.utime(errors, ns=(original.st_atime_ns, original.st_mtime_ns))


def test_zip_imports_without_the_installed_package(tmp_path: Path) -> None:
    archive = build_package_zip(tmp_path)
    code = (
        "import sys; sys.path = [p for p in sys.path if 'site-packages' in p or 'lib/python' in p];"
        f"sys.path.insert(0, {str(archive)!r});"
        "import airflow_delta_provider.delta.errors as e, airflow_delta_provider as p;"
        "print(p.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    assert out.strip().startswith(str(archive))
