"""The documentation site (``docs/``, ``make docs``), opened in Debian's Chromium.

The site is the one ``$TOPOFL_DOCS_HTML`` names when set (``make test`` builds it first,
with ``make docs``), else it is built here exactly as ``make docs`` builds it: Sphinx with
warnings as errors into ``build/docs/html``. Playwright then drives Chromium over it:

- every page Sphinx wrote loads without a JavaScript error, and no file of the site that
  a page asks for fails to load; the browser is offline (a CDN cannot be reached), so
  the site is shown as it is offline;
- every ``href`` and ``src`` that points into the site names a file that exists, and its
  ``#anchor`` an element of that page;
- the pages of the key estimators (pTopoFL, FedTopo, GFC's clusterer, the descriptor)
  show every parameter of their constructor, in the signature and in the numpydoc
  Parameters list;
- every notebook of ``results/notebooks/`` has its page, with its figures, and no
  progress-bar widget left (they are their final text); every claim id of
  ``results/claims.csv`` is on the results page; each paper page carries the paper's
  reference from :mod:`topofl_lib.citation`.

Screenshots of the landing page, of PTopoFL's API page and of a rendered notebook are
kept in ``build/docs/screenshots/``. Skipped, saying why, where Chromium
(``/usr/bin/chromium``, Debian package ``chromium``; ``make test`` installs it) is missing.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = REPO / "build" / "docs" / "screenshots"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="no Chromium at /usr/bin/chromium: install the Debian package 'chromium' "
           "(make test does) to open the documentation site")

# The estimators whose API pages must show their parameters: page name -> class.
KEY_CLASSES = {
    "topofl_lib.federated.PTopoFL": ("topofl_lib.federated", "PTopoFL"),
    "topofl_lib.fedtopo.FedTopo": ("topofl_lib.fedtopo", "FedTopo"),
    "topofl_lib.clustering.GravitationalFederatedClustering":
        ("topofl_lib.clustering", "GravitationalFederatedClustering"),
    "topofl_lib.topology.TopologicalDescriptor":
        ("topofl_lib.topology", "TopologicalDescriptor"),
}

# What a page holds, read in the browser: ids (anchors), every href/src (absolute), and
# whether the theme's article is there.
PAGE_JS = """() => ({
  ids: [...document.querySelectorAll('[id]')].map(e => e.id)
        .concat([...document.querySelectorAll('a[name]')].map(e => e.name)),
  refs: [...document.querySelectorAll('[href]')].map(e => e.href)
        .concat([...document.querySelectorAll('[src]')].map(e => e.src)),
  article: document.querySelector('main article') !== null,
})"""

# The class's signature and the names of its numpydoc Parameters list.
PARAMETERS_JS = """() => {
  const sig = document.querySelector('dl.py.class > dt.sig');
  const field = [...document.querySelectorAll('dl.py.class > dd > dl.field-list > dt')]
      .find(dt => dt.textContent.trim().startsWith('Parameters'));
  const names = field ? [...field.nextElementSibling.querySelectorAll(':scope > dl > dt > strong')]
      .flatMap(s => s.textContent.split(',').map(n => n.trim())) : [];
  return {signature: sig ? sig.textContent : '', names};
}"""


def sphinx_command(html: Path) -> list[str]:
    """``make docs``'s Sphinx call (warnings are errors), building into ``html``."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-j", "auto",
            "-b", "html",
            "-d", str(html.parent / "doctrees"), str(REPO / "docs"), str(html)]


@pytest.fixture(scope="module")
def site() -> Path:
    """The built site: ``$TOPOFL_DOCS_HTML``, else built now into ``build/docs/html``."""
    given = os.environ.get("TOPOFL_DOCS_HTML")
    if given:
        html = Path(given)
        assert (html / "index.html").is_file(), f"TOPOFL_DOCS_HTML={given} holds no built site"
        return html
    html = REPO / "build" / "docs" / "html"
    done = subprocess.run(sphinx_command(html), cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, ("the docs build failed:\n"
                                  f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return html


def _pages(html: Path) -> list[Path]:
    """The pages Sphinx wrote (not the theme's files under ``_static``)."""
    return sorted(p for p in html.rglob("*.html")
                  if not p.relative_to(html).parts[0].startswith("_"))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM,
                                      args=["--no-sandbox", "--disable-gpu"])
        # the site must work offline: the context has no network (its files load from
        # disk). Playwright's offline mode, not a route that hands every request to Python
        # to let the site's files through: that took 44 s for the crawl against 35 s
        context = chromium.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
        try:
            yield context
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def crawl(site, browser) -> dict[Path, dict]:
    """Every page opened once: ``{page: {"ids", "refs", "article", "errors", "failed"}}``."""
    page = browser.new_page()
    errors: list[str] = []
    failed: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed",
            lambda req: failed.append(req.url) if req.url.startswith("file:") else None)
    seen = {}
    for path in _pages(site):
        errors.clear()
        failed.clear()
        response = page.goto(path.as_uri(), wait_until="load")
        info = page.evaluate(PAGE_JS)
        seen[path] = {**info, "loaded": response is not None and response.ok,
                      "errors": list(errors), "failed": list(failed)}
    page.close()
    return seen


def test_the_site_has_its_pages(site, crawl):
    """Not vacuous: the landing page, the notebooks, the guides (one page per Markdown
    file of docs/guide/) and the API pages are all there."""
    names = {p.relative_to(site).as_posix() for p in crawl}
    guides = [f"guide/{p.stem}.html" for p in (REPO / "docs" / "guide").glob("*.md")]
    assert len(guides) >= 7
    for name in ("index.html", "getting_started.html", "results.html", "scale.html",
                 "papers/ptopofl.html", "papers/fedtopo.html", "papers/gfc.html",
                 "api/index.html", "api/modules/topofl_lib.federated.html",
                 "guide/index.html", *guides):
        assert name in names
    assert sum(n.startswith("api/generated/") for n in names) > 50


def test_every_page_loads(crawl):
    """Each page loads, shows the theme's article, and raises no JavaScript error; no file
    of the site that it asks for is missing."""
    broken = {p.name: info for p, info in crawl.items()
              if not info["loaded"] or info["errors"] or info["failed"]}
    assert not broken, f"pages that did not load cleanly: {broken}"
    # the search page is the theme's own page, without an article
    assert [p.name for p, info in crawl.items() if not info["article"]] == ["search.html"]


def broken_links(crawl: dict[Path, dict]) -> tuple[list[str], int, int]:
    """The internal links of ``crawl`` that point nowhere, and how many files and anchors
    were checked.

    A reference into the site (a ``file:`` URL) must name an existing file; its anchor,
    on a page of ``crawl``, an id (or ``<a name>``) of that page. Other URLs (http, data,
    mailto) are not checked.
    """
    ids = {path.resolve(): set(info["ids"]) for path, info in crawl.items()}
    problems, n_files, n_anchors = [], 0, 0
    for page, info in crawl.items():
        for ref in info["refs"]:
            url = urlsplit(ref)
            if url.scheme != "file":
                continue
            target = Path(unquote(url.path))
            n_files += 1
            if not target.exists():
                problems.append(f"{page.name} -> {ref}: no such file")
            elif url.fragment and target.resolve() in ids:
                n_anchors += 1
                if unquote(url.fragment) not in ids[target.resolve()]:
                    problems.append(f"{page.name} -> {ref}: no such anchor")
    return problems, n_files, n_anchors


def test_the_link_check_finds_broken_links(tmp_path):
    """Not vacuous: a missing file and a missing anchor are reported, a good link is not."""
    page, other = tmp_path / "a.html", tmp_path / "b.html"
    page.write_text("")
    other.write_text("")
    crawl = {page: {"ids": ["top"], "refs": [other.as_uri() + "#nowhere", page.as_uri() + "#top",
                                              (tmp_path / "gone.png").as_uri(),
                                              "https://example.org/x"]},
             other: {"ids": ["here"], "refs": []}}
    problems, n_files, n_anchors = broken_links(crawl)
    assert (n_files, n_anchors) == (3, 2)
    assert len(problems) == 2
    assert "b.html#nowhere: no such anchor" in problems[0]
    assert "gone.png: no such file" in problems[1]


def test_no_broken_internal_link(crawl):
    """Every href/src into the site names an existing file, and its anchor an element."""
    problems, n_files, n_anchors = broken_links(crawl)
    assert not problems, f"{len(problems)} broken internal links:\n" + "\n".join(problems[:40])
    assert n_files > 10_000 and n_anchors > 1_000  # the check saw the site's links


@pytest.mark.parametrize("name", sorted(KEY_CLASSES))
def test_key_estimators_show_their_parameters(site, browser, name):
    """The class page shows each constructor parameter in its signature and its list."""
    import importlib

    module, attr = KEY_CLASSES[name]
    cls = getattr(importlib.import_module(module), attr)
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    page = browser.new_page()
    page.goto((site / "api" / "generated" / f"{name}.html").as_uri())
    shown = page.evaluate(PARAMETERS_JS)
    if name == "topofl_lib.federated.PTopoFL":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "api_ptopofl.png"))
    page.close()
    assert len(params) >= 2
    assert [p for p in params if not re.search(rf"\b{p}\b", shown["signature"])] == []
    assert [p for p in params if p not in shown["names"]] == []


def test_landing_page(site, browser):
    """The landing page links the seven parts of the site; its screenshot is kept."""
    page = browser.new_page()
    page.goto((site / "index.html").as_uri())
    nav = page.locator("ul.bd-navbar-elements").first.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "landing.png"))
    page.close()
    for title in ("Getting started", "Notebooks", "Results versus the papers", "Guides",
                  "The papers", "Running at scale", "API reference"):
        assert title in nav


def _png_outputs(notebook: Path) -> int:
    cells = json.loads(notebook.read_text())["cells"]
    return sum("image/png" in out.get("data", {})
               for cell in cells for out in cell.get("outputs", []))


def test_notebooks_are_rendered_with_their_outputs(site, browser):
    """Each committed notebook has a page with one image per PNG output, and no widget."""
    notebooks = sorted((REPO / "results" / "notebooks").glob("*.ipynb"))
    assert notebooks
    page = browser.new_page()
    for nb in notebooks:
        page.goto((site / "notebooks" / f"{nb.stem}.html").as_uri())
        images = page.locator("main article div.output_area img")
        assert images.count() == _png_outputs(nb), nb.name
        assert page.locator("script[type='application/vnd.jupyter.widget-view+json']").count() == 0
        if nb.stem == "scenario_a_healthcare":
            assert "100%" in page.locator("main article").inner_text()  # a final progress bar
            images.first.scroll_into_view_if_needed()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "notebook.png"))
    page.close()


def test_results_page_lists_every_claim(site, browser):
    """Every id of results/claims.csv is on the results page (built from comparison.md)."""
    with open(REPO / "results" / "claims.csv", newline="") as f:
        ids = [row["id"] for row in csv.DictReader(f)]
    page = browser.new_page()
    page.goto((site / "results.html").as_uri())
    text = page.locator("main article").inner_text()
    page.close()
    assert len(ids) > 100
    assert [i for i in ids if i not in text] == []


@pytest.mark.parametrize("key", ["ptopofl", "fedtopo", "gfc"])
def test_paper_pages_cite_the_paper(site, browser, key):
    """A paper's page shows its reference and BibTeX entry from topofl_lib.citation."""
    from topofl_lib.citation import bibtex, reference

    page = browser.new_page()
    page.goto((site / "papers" / f"{key}.html").as_uri())
    text = page.locator("main article").inner_text()
    page.close()
    assert reference(key) in text
    assert bibtex(key).splitlines()[0] in text
