"""Sphinx configuration for airflow-delta-provider.

Built with ``make docs`` (``sphinx -W``: any warning fails the build). Only
the built-in alabaster theme and Sphinx's own extensions are used.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

from airflow_delta_provider import __version__

project = "airflow-delta-provider"
author = "airflow-delta-provider contributors"
copyright = "the airflow-delta-provider contributors; Apache License 2.0"
release = __version__
version = __version__

extensions = ["sphinx.ext.autodoc"]

exclude_patterns = ["_build"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"

html_theme = "alabaster"
html_theme_options = {
    "description": "Delta Lake tables on Spark, from Airflow, without Databricks",
    "fixed_sidebar": True,
}

# autodoc documents only this provider's sensor and trigger modules, whose
# imports are light; type hints stay in the signatures.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": True}
