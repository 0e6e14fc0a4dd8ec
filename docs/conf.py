"""Sphinx configuration of topofl's documentation site.

``make docs`` builds it into ``build/docs/html`` with warnings as errors. What the site
takes from the repository at build time (the API pages, the executed notebooks of
``results/notebooks/``, the results-versus-paper page, the papers' citations) is made by
the local extension ``_ext/topofl_docs.py``; nothing under ``results/`` is modified.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

from topofl_lib.environment import distribution_version  # noqa: E402

project = "topofl"
author = "the topofl developers"
copyright = "the topofl developers"
release = version = distribution_version()

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "nbsphinx",
    "topofl_docs",
]

# _generated holds include files (the comparison table): they are parts of pages, not pages
exclude_patterns = ["_build", "_ext", "_generated", "**.ipynb_checkpoints"]
root_doc = "index"

# -- API reference: a page per module and per function or class (_ext/topofl_docs.py) -----
autodoc_default_options = {"member-order": "bysource"}
# Signatures show names and defaults; the types are in each numpydoc Parameters section.
autodoc_typehints = "none"
autodoc_preserve_defaults = True
numpydoc_show_class_members = False  # the class pages list members through autodoc
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()  # tests/test_docstrings.py checks the sections

# -- Notebooks: the committed executed copies, never run again ------------------------------
nbsphinx_execute = "never"
nbsphinx_allow_errors = False
# The copies carry no widget outputs (see _ext/topofl_docs.py), so no widget JavaScript
# from a CDN is needed; the site works offline.
nbsphinx_widgets_path = ""
nbsphinx_requirejs_path = ""
nbsphinx_prolog = """
.. note::

   This is the executed copy of ``notebooks/{{ env.docname.split('/')[-1] }}.ipynb`` from the
   committed run (``results/notebooks/``), shown as it ran, not executed again. Progress
   bars show their final state as text.
"""

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"topofl {release}"
html_static_path = ["_static"]
html_css_files = ["topofl.css"]
# results/comparison.md links its environment record: the same file, beside the page
html_extra_path = [str(ROOT / "results" / "environment.json")]
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # the sidebar shows the current page's branch only: the API has about 500 pages, and
    # a fully expanded tree on each would multiply the build time and the site's size
    "collapse_navigation": True,
    # every part of the site in the top bar (the theme's default puts the sixth and later
    # under "More")
    "header_links_before_dropdown": 7,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": [], "getting_started": [], "results": [], "scale": []}
