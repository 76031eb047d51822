"""``docs/interop-matrix.rst`` is what the matrix's tests render (:mod:`.render_matrix`)."""

from __future__ import annotations

from pathlib import Path

from tests.delta_spark.render_matrix import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop-matrix.rst"


def test_the_docs_page_shows_the_matrix_the_tests_run():
    assert PAGE.read_text() == render(), (
        "docs/interop-matrix.rst is stale: .venv/bin/python -m tests.delta_spark.render_matrix > docs/interop-matrix.rst"
    )
