"""The import contracts hold: ``lint-imports`` over setup.cfg's ``[importlinter]``.

The contracts (DESIGN.md "Layers"): the layers from the Airflow operators,
sensors and triggers down to the protocol core; the core free of PySpark and
Airflow, the Spark engine free of Airflow; and no import cycle inside
``delta`` or ``spark``, between packages or modules at any depth. grimp,
import-linter's graph, counts every import: top level, inside a function and
under ``TYPE_CHECKING`` (the second test shows it does).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "airflow_delta_provider"
MAX_MODULES_PER_FOLDER = 15


def _lint_imports(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` run from ``cwd`` (it imports the packages found there)."""
    script = Path(sys.executable).with_name("lint-imports")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "importlinter.cli"]
    return subprocess.run([*command, "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold() -> None:
    proc = _lint_imports(ROOT, "--config", "setup.cfg")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 broken" in proc.stdout
    assert "KEPT" in proc.stdout and "BROKEN" not in proc.stdout


def test_a_cycle_through_a_function_or_type_checking_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract sees the imports that hid the old cycles."""
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from cyclepkg.high import High
            """
        )
    )
    (pkg / "high.py").write_text(
        textwrap.dedent(
            """
            class High:
                def run(self):
                    from cyclepkg import low

                    return low
            """
        )
    )
    (tmp_path / "setup.cfg").write_text(
        textwrap.dedent(
            """
            [importlinter]
            root_package = cyclepkg

            [importlinter:contract:acyclic]
            name = no cycles
            type = acyclic_siblings
            ancestors = cyclepkg
            """
        )
    )
    proc = _lint_imports(tmp_path, "--config", "setup.cfg")
    assert proc.returncode != 0, proc.stdout
    assert "No cycles are allowed in cyclepkg" in proc.stdout


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]
        if (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}
