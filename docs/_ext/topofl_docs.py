"""The pages of topofl's documentation that are made from the repository at build time.

At ``config-inited``, before Sphinx looks for its sources, this extension writes, each
file only when its content changed:

* ``api/modules/<module>.rst``: one page per public module of ``topofl_lib`` (each
  subpackage and top-level module but ``__main__`` and the private ones). The page shows
  the module's docstring and, per module that defines them, its docstring, a table of
  its public functions and classes (the names of the modules' ``__all__``, walked as
  ``tests/test_docstrings.py`` walks them) with the first paragraph of each docstring,
  and the documentation of its functions (autodoc and numpydoc: signature, parameters,
  returns).
* ``api/generated/<name>.rst``: one page per class (the estimators: signature,
  parameters, attributes, methods). An object is documented once, under its shortest
  public name (``topofl_lib.federated.PTopoFL``, not
  ``topofl_lib.federated.ptopofl.PTopoFL``).
* ``notebooks/<name>.ipynb``: copies of the executed notebooks of ``results/notebooks/``,
  which nbsphinx renders without executing them (``nbsphinx_execute = "never"``). In the
  copies each Jupyter widget output (the runs' progress bars) is replaced by the text of
  its final state, which needs no JavaScript; the widget state is dropped.
* ``_generated/comparison.rst``: ``results/comparison.md`` in reStructuredText (pandoc,
  from the ``pypandoc-binary`` wheel, which nbsphinx runs too), without its title,
  included by ``results.rst``.
* ``guide/NAME.rst``: each guide ``guide/NAME.md`` (the README's longer sections,
  Markdown so that their code blocks run as tests and their numbers are traced like the
  README's) in reStructuredText, the same way; its figures are copied into
  ``_generated/figures/``, its links into the repository point at the site's own page
  for the file (the results page, an executed notebook) or, where the site has none,
  become plain text.

It also adds the directive ``.. topofl-citation:: KEY``, the full reference and BibTeX
entry of a paper from :mod:`topofl_lib.citation`, and skips inherited class members that
are not defined in ``topofl_lib`` (scikit-learn's ``get_params``, ``tuple.count``...).
Nothing under ``results/`` is modified.
"""

from __future__ import annotations

import copy
import html
import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import nbformat
import pypandoc
from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

import topofl_lib

logger = logging.getLogger(__name__)

PACKAGE = "topofl_lib"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BAR_WIDTH = 10


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it already holds it (keeps rebuilds incremental)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# -- the API pages -----------------------------------------------------------------------------

def public_modules() -> list[str]:
    """The top-level public modules of ``topofl_lib``, by name (``topofl_lib.core``...)."""
    return sorted(f"{PACKAGE}.{info.name}" for info in pkgutil.iter_modules(topofl_lib.__path__)
                  if not info.name.startswith("_"))


def _walk(name: str) -> list:
    """``name`` and, for a package, its public submodules (imported)."""
    module = importlib.import_module(name)
    found = [module]
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, name + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(importlib.import_module(info.name))
    return found


def _exported(module) -> list[str]:
    """The public names of ``module``: its ``__all__``, else the names it defines."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
    return list(names)


def api_objects(name: str) -> dict[str, list[tuple[str, object]]]:
    """``{defining module: [(public name, object)]}`` of module ``name``'s API.

    Every function and class exported by ``name`` or one of its submodules and defined
    inside it, once, under its shortest public name (fewest dots, then alphabetical);
    sorted by module, then by name.
    """
    best: dict[int, tuple[str, object]] = {}
    for module in _walk(name):
        for attr in _exported(module):
            obj = getattr(module, attr)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            defined = getattr(obj, "__module__", "") or ""
            if defined != name and not defined.startswith(name + "."):
                continue
            path = f"{module.__name__}.{attr}"
            old = best.get(id(obj), (None,))[0]
            if old is None or (path.count("."), path) < (old.count("."), old):
                best[id(obj)] = (path, obj)
    grouped: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for path, obj in best.values():
        grouped[obj.__module__].append((path, obj))
    return {mod: sorted(items, key=lambda item: item[0].rsplit(".", 1)[1].lower())
            for mod, items in sorted(grouped.items())}


def summary(obj) -> str:
    """The first paragraph of ``obj``'s docstring, on one line."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split()) or "(no docstring)"


def _heading(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def _section(items: list[tuple[str, object]]) -> str:
    """The body of a module's section: a table of ``items`` (a link and the summary
    each), the hidden toctree of the class pages, and the functions' documentation."""
    rows = "".join(f"   * - :obj:`~{path}`\n     - {summary(obj)}\n" for path, obj in items)
    parts = [f".. list-table::\n   :widths: 30 70\n   :class: topofl-api-table\n\n{rows}"]
    if classes := [path for path, obj in items if inspect.isclass(obj)]:
        pages = "".join(f"   ../generated/{path}\n" for path in classes)
        parts.append(f".. toctree::\n   :hidden:\n\n{pages}")
    parts += [f".. autofunction:: {path}\n" for path, obj in items if not inspect.isclass(obj)]
    return "\n".join(parts)


def module_page(name: str, groups: dict[str, list[tuple[str, object]]]) -> str:
    """The reStructuredText of the API page of top-level module ``name``: its docstring,
    then per defining module its docstring, the table of its objects and its functions."""
    parts = [_heading(f"``{name}``", "="), f".. automodule:: {name}\n   :no-members:\n"]
    groups = dict(groups)
    if name in groups:
        parts += [_heading("Defined here" if len(groups) > 1 else "Functions and classes", "-"),
                  _section(groups.pop(name))]
    for module, items in groups.items():
        parts += [_heading(f"``{module.removeprefix(name + '.')}``", "-"),
                  f".. automodule:: {module}\n   :no-members:\n", _section(items)]
    return "\n".join(parts)


def class_page(path: str) -> str:
    """The reStructuredText of the page of the class named ``path``: its docstring
    (parameters, attributes) and its methods, inherited ones from ``topofl_lib`` too."""
    module, short = path.rsplit(".", 1)
    return (f"{_heading(short, '=')}\n.. currentmodule:: {module}\n\n"
            f".. autoclass:: {short}\n   :members:\n   :inherited-members:\n"
            "   :show-inheritance:\n")


def _write_folder(folder: Path, pages: dict[str, str]) -> None:
    """Write ``{stem: text}`` as ``folder/<stem>.rst``; remove the folder's other pages."""
    for stem, text in pages.items():
        write_if_changed(folder / f"{stem}.rst", text)
    for stale in folder.glob("*.rst"):
        if stale.stem not in pages:
            stale.unlink()


def write_api_pages(docs: Path) -> tuple[int, int]:
    """Write the module pages (``api/modules/``) and the class pages (``api/generated/``).

    Returns
    -------
    tuple of int
        The numbers of module pages and class pages.
    """
    modules, objects = {}, {}
    for name in public_modules():
        groups = api_objects(name)
        modules[name] = module_page(name, groups)
        objects.update({path: class_page(path) for items in groups.values()
                        for path, obj in items if inspect.isclass(obj)})
    _write_folder(docs / "api" / "modules", modules)
    _write_folder(docs / "api" / "generated", objects)
    return len(modules), len(objects)


# -- the notebooks -----------------------------------------------------------------------------

def _strip_tags(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def widget_text(model_id: str, state: dict) -> str | None:
    """The text of a widget's final state (a tqdm progress bar: description, bar, counts).

    HTML and Label widgets give their text, progress widgets a bar of ``BAR_WIDTH``
    characters, boxes their children in order; ``None`` when the model is not in the state.
    """
    model = state.get(model_id)
    if model is None:
        return None
    name, values = model.get("model_name", ""), model.get("state", {})
    if "children" in values:
        texts = [widget_text(child.removeprefix("IPY_MODEL_"), state)
                 for child in values["children"]]
        return "".join(t for t in texts if t)
    if name in ("HTMLModel", "LabelModel"):
        return _strip_tags(str(values.get("value", "")))
    if name in ("FloatProgressModel", "IntProgressModel"):
        low, high = values.get("min", 0) or 0, values.get("max", 100) or 100
        share = min(max((values.get("value", 0) - low) / max(high - low, 1e-12), 0.0), 1.0)
        filled = round(share * BAR_WIDTH)
        return "|" + "\u2588" * filled + " " * (BAR_WIDTH - filled) + "|"
    return ""


def static_widgets(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose widget outputs are plain text of their final state.

    An output whose widget is not in the notebook's saved state is dropped. The saved
    widget state itself is removed from the metadata.
    """
    nb = copy.deepcopy(nb)
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        outputs = []
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                outputs.append(output)
                continue
            text = widget_text(view.get("model_id", ""), state)
            if text:
                output.data = nbformat.from_dict({"text/plain": text})
                outputs.append(output)
        if "outputs" in cell:
            cell.outputs = outputs
    return nb


def copy_notebooks(root: Path, docs: Path) -> list[str]:
    """Copy ``results/notebooks/*.ipynb`` to ``docs/notebooks/`` with static widgets."""
    target = docs / "notebooks"
    names = []
    for source in sorted((root / "results" / "notebooks").glob("*.ipynb")):
        nb = static_widgets(nbformat.read(source, as_version=4))
        write_if_changed(target / source.name, json.dumps(nb, indent=1, ensure_ascii=False)
                         + "\n")
        names.append(source.stem)
    for stale in target.glob("*.ipynb"):
        if stale.stem not in names:
            stale.unlink()
    return names


# -- the results page --------------------------------------------------------------------------

def markdown_to_rst(text: str) -> str:
    """GitHub Markdown to reStructuredText with pandoc (lines unwrapped).

    A ``<br>`` inside a table cell (two reasons in one cell) becomes ``"; "``: a simple
    reStructuredText table has no line breaks in a cell. A link's text loses its
    backticks.
    """
    text = re.sub(r"\s*<br\s*/?>\s*", "; ", text)
    # a link's text in backticks: reStructuredText has no code inside a link
    text = re.sub(r"\[`([^`\]]+)`\]\(", r"[\1](", text)
    done = subprocess.run([pypandoc.get_pandoc_path(), "--from=gfm", "--to=rst",
                           "--columns=100000"],
                          input=text, capture_output=True, text=True, check=True)
    return done.stdout


def write_comparison(root: Path, docs: Path) -> None:
    """``results/comparison.md`` without its title, as ``_generated/comparison.rst``."""
    text = (root / "results" / "comparison.md").read_text(encoding="utf-8")
    body = re.sub(r"\A# [^\n]*\n", "", text)
    write_if_changed(docs / "_generated" / "comparison.rst", markdown_to_rst(body))


# -- the guides --------------------------------------------------------------------------------

#: Repository files that have a page of their own on the site, and that page (from guide/).
SITE_PAGES = {"README.md": "../index.html", "results/comparison.md": "../results.html"}
_LINK = re.compile(r"(!?)\[([^\]]*)\]\((?!https?:|mailto:)([^)\s]+)\)")
_MARKER_LINE = re.compile(r"^<!-- topofl:(begin|end) [\w.-]+ -->[ \t]*\n?", re.MULTILINE)


def _site_target(target: str, docs: Path) -> str | None:
    """Where a guide's link goes on the site, relative to ``guide/``; None: nowhere (a
    file of the repository the site does not carry), so the link's text stays alone."""
    path, _, anchor = target.partition("#")
    if not path.startswith("../../"):  # another guide, or a page of the site
        return (path[:-3] + ".html" if path.endswith(".md") else path) + (
            f"#{anchor}" if anchor and not path.endswith(".md") else "")
    path = path[len("../../"):]
    if path in SITE_PAGES:
        return SITE_PAGES[path]
    notebook = re.fullmatch(r"results/notebooks/(\w+)\.ipynb", path)
    if notebook and (docs / "notebooks" / f"{notebook.group(1)}.ipynb").exists():
        return f"../notebooks/{notebook.group(1)}.html"
    return None


def _site_links(text: str, source: Path, root: Path, docs: Path) -> str:
    """A guide's links and images as the site has them: figures copied into
    ``_generated/figures/``, links into the repository onto the site's pages."""
    def replace(m: re.Match) -> str:
        image, label, target = m.groups()
        if image:
            figure = (source.parent / target).resolve()
            if not figure.is_relative_to(root / "figures") or not figure.is_file():
                raise ValueError(f"{source.name} shows {target!r}, not a file of figures/")
            copy = docs / "_generated" / "figures" / figure.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            if not copy.exists() or copy.read_bytes() != figure.read_bytes():
                copy.write_bytes(figure.read_bytes())
            return f"![{label}](../_generated/figures/{figure.name})"
        site = _site_target(target, docs)
        return label if site is None else f"[{label}]({site})"
    return _LINK.sub(replace, text)


def write_guides(root: Path, docs: Path) -> list[str]:
    """Each guide ``docs/guide/NAME.md`` (:func:`topofl_lib.readme_sections.documents`,
    the README aside) as the page ``docs/guide/NAME.rst`` (pandoc)."""
    from topofl_lib.readme_sections import documents

    names = []
    for source in documents(root):
        if source.name == "README.md":
            continue
        text = _MARKER_LINE.sub("", source.read_text(encoding="utf-8"))
        page = markdown_to_rst(_site_links(text, source, root, docs))
        write_if_changed(source.with_suffix(".rst"), page)
        names.append(source.stem)
    return names


# -- the citation directive --------------------------------------------------------------------

class CitationDirective(Directive):
    """``.. topofl-citation:: KEY``: the paper's reference line and its BibTeX entry."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        from topofl_lib.citation import bibtex, reference

        key = self.arguments[0]
        try:
            line, entry = reference(key), bibtex(key)
        except ValueError as exc:
            return [self.state.document.reporter.error(str(exc), line=self.lineno)]
        quote = nodes.block_quote("", nodes.paragraph(line, line))
        block = nodes.literal_block(entry, entry, language="bibtex")
        return [quote, block]


# -- hooks -------------------------------------------------------------------------------------

def skip_foreign_member(app, what, name, obj, skip, options):
    """Skip a class member defined outside ``topofl_lib`` (inherited from a dependency)."""
    if what != "class":
        return None
    target = obj.fget if isinstance(obj, property) else obj
    target = getattr(target, "__func__", target)
    owner = getattr(target, "__objclass__", None)
    module = getattr(owner, "__module__", None) or getattr(target, "__module__", None)
    if callable(target) or isinstance(obj, property):
        if module is None or not str(module).startswith(PACKAGE):
            return True
    if (getattr(obj, "__doc__", "") or "").startswith("Alias for field number"):
        return True  # a NamedTuple's field: its class docstring documents it
    return None


def generate(app: Sphinx, config: Config) -> None:
    """Write the generated sources (see the module docstring)."""
    docs = Path(app.srcdir)
    root = docs.parent
    n_modules, n_classes = write_api_pages(docs)
    notebooks = copy_notebooks(root, docs)
    write_comparison(root, docs)
    guides = write_guides(root, docs)
    logger.info("topofl_docs: %d API module pages, %d class pages, %d notebooks, %d guides",
                n_modules, n_classes, len(notebooks), len(guides))


def setup(app: Sphinx) -> dict:
    # nbsphinx runs the `pandoc` it finds on PATH: the one of the pypandoc-binary wheel
    # (pandoc 3; Debian 12's 2.17 leaves "(|z|" unescaped in reStructuredText)
    os.environ["PATH"] = os.pathsep.join([str(Path(pypandoc.get_pandoc_path()).parent),
                                          os.environ.get("PATH", "")])
    app.connect("config-inited", generate)
    app.connect("autodoc-skip-member", skip_foreign_member)
    app.add_directive("topofl-citation", CitationDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
