"""Every notebook's parameters: their values in each profile, checked before a notebook runs.

``topofl_lib/profiles.toml`` holds every notebook's values in each profile, ranked
``quick`` (CI, minutes) < ``cpu`` (the committed runs on a 2-core CPU) < ``paper`` (the
papers' protocols); :data:`topofl_lib.notebook_models.MODELS` says what each value may be
(one pydantic model per notebook), and every profile is checked against it on import.

A notebook's ``parameters`` cell holds the ``quick`` values as literals, each with its help
and the other profiles' values as a comment (:func:`parameters_cell_source`;
``scripts/sync_parameters_cells.py`` writes it). The next cell runs
``cfg = notebook_parameters("<name>", globals())``, which validates every value and writes
the validated values back before anything runs or is written. ``reproduce --profile P``
injects every value of ``P`` through papermill; ``papermill NB OUT -p profile P`` takes
``P``'s value of every parameter it was not given.

Papermill puts its values in a cell of its own (first line ``# Parameters``) after the cell
tagged ``parameters`` and only warns when a name is unknown or the tag is missing;
:func:`notebook_parameters` reads that cell back from the kernel's input history and
refuses a name the notebook does not have (``-p n_seed 1``), and a name a later cell set
again (the parameters cell, run after papermill's because it lost its tag).
"""

from __future__ import annotations

import ast
import json
import sys
import textwrap
import tomllib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._validation import check_choice
from .notebook_models import EXECUTION, MODELS, Parameters, validate
from .outputs import output_dirs

__all__ = ["EXECUTION", "MODELS", "NOTEBOOKS", "PROFILES", "Notebook", "NotebookParameters",
           "notebook_parameters", "parameters_cell", "parameters_cell_source",
           "write_parameters_cell"]

#: Profile names, from the shortest to the longest protocol.
PROFILES = ("quick", "cpu", "paper")
#: Parameters every notebook's parameters cell sets besides those of its model.
COMMON = ("profile", "output_dir")
#: The file of the profiles' values.
VALUES_FILE = Path(__file__).with_name("profiles.toml")
#: The first line of the cell papermill injects (its Python translator's comment).
PAPERMILL_HEADER = "# Parameters"
#: papermill's own optional parameters (``--inject-paths``), never the notebook's.
PAPERMILL_PREFIX = "PAPERMILL_"
OUTPUT_DIR_HELP = "None: $TOPOFL_OUTPUT_DIR, else build/interactive/ (never figures/, results/)"


# --------------------------------------------------------------------------- notebooks
@dataclass(frozen=True)
class Notebook:
    """A notebook that ``reproduce`` runs: its model and its values in each profile.

    Parameters
    ----------
    claims : str
        The notebook writes its claim rows to ``results/claims/<claims>.csv``.
    model : type
        Its :class:`Parameters` model.
    profiles : Mapping
        Profile name -> its values of the model's fields but those of :data:`EXECUTION`
        (checked here).
    notes : str
        What each profile is to this notebook, for the parameters cell's header.
    """

    claims: str
    model: type[Parameters]
    profiles: Mapping[str, Mapping[str, Any]]
    notes: str = "quick (CI), cpu (committed), paper"

    def __post_init__(self):
        if set(self.profiles) != set(PROFILES):
            raise ValueError(f"profiles must be {PROFILES}, got {sorted(self.profiles)}")
        for profile, values in self.profiles.items():
            missing = sorted(set(self.spec) - set(values))
            if missing:
                raise ValueError(f"profile {profile!r}: missing {missing}")
            validate(self.model, values, f"profile {profile!r}: ")

    @property
    def spec(self) -> list[str]:
        """The parameters the profiles set (the model's fields but the execution ones)."""
        return [n for n in self.model.model_fields if n not in self.execution]

    @property
    def execution(self) -> list[str]:
        """The notebook's :data:`EXECUTION` parameters (how it runs)."""
        return [n for n in self.model.model_fields if n in EXECUTION]

    def values(self, profile: str) -> dict[str, Any]:
        """The validated values of ``profile`` (a copy: a notebook may change its lists)."""
        check_choice(profile, "profile", PROFILES)
        checked = validate(self.model, self.profiles[profile])
        return {k: v for k, v in checked.items() if k not in EXECUTION}


def load_notebooks(path: Path = VALUES_FILE) -> dict[str, Notebook]:
    """The notebooks of :data:`MODELS` with their profile values read from ``path``.

    A file over 1 MiB, broken TOML, a notebook missing or unknown, a value out of range:
    ``ValueError`` (``TypeError`` for a value of the wrong type) naming the file.
    """
    path = Path(path).resolve()
    if path.stat().st_size > 1 << 20:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, more than a profiles file's "
                         "1 MiB")
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    if set(table) != set(MODELS):
        raise ValueError(f"{path} must hold the notebooks {sorted(MODELS)}, got {sorted(table)}")
    notebooks = {}
    for name, entry in table.items():
        own = {p: {**entry.get("shared", {}), **entry.get(p, entry.get("paper", {}))}
               for p in PROFILES}
        try:
            if not {"claims", "profiles"} <= set(entry):
                raise ValueError("needs 'claims' (its claim file) and 'profiles' (their notes)")
            notebooks[name] = Notebook(entry["claims"], MODELS[name], own, entry["profiles"])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{path}, notebook {name!r}: {exc}") from None
    return notebooks


#: notebook name -> its parameters and their values in each profile.
NOTEBOOKS: dict[str, Notebook] = load_notebooks()


# --------------------------------------------------------------------------- the notebook call
@dataclass(frozen=True)
class NotebookParameters:
    """A notebook's validated parameters (``p.n_seeds``...) and output folders.

    Parameters
    ----------
    notebook : str
        The notebook's name.
    profile : str
        The label its claim rows carry: the profile's name when every value is the
        profile's, else ``"custom"``.
    values : Mapping
        The validated parameters, also readable as attributes.
    figures_dir, results_dir : Path
        Where the notebook writes its figures and results.
    claims : str
        The stem of its claim file (``results/claims/<claims>.csv``).
    """

    notebook: str
    profile: str
    values: Mapping[str, Any]
    figures_dir: Path
    results_dir: Path
    claims: str

    def __getattr__(self, name: str):
        if name != "values" and name in self.values:
            return self.values[name]
        raise AttributeError(f"{self.notebook!r} has no parameter {name!r}")


def _assigned(source: str) -> set[str]:
    """Names a cell's top-level statements assign (an unparsable cell assigns none)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return set()
    targets = [t for n in body if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _cells_run_before() -> list[str]:
    """Sources of the cells this IPython kernel ran before the running one (oldest first).

    Empty outside IPython. The input history holds each cell as IPython ran it (magics
    turned into calls), the running cell last.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None)
    return [str(cell) for cell in history[1:-1]] if history else []


def _check_injected(notebook: str, known: set[str]) -> set[str] | None:
    """The names papermill injected (None: not run by papermill); refuse an unknown one
    and one that a later cell set again (see the module doc)."""
    cells = _cells_run_before()
    injected = [i for i, cell in enumerate(cells)
                if cell.lstrip().splitlines()[:1] == [PAPERMILL_HEADER]]
    if not injected:
        return None
    names = {n for n in _assigned(cells[injected[-1]]) if not n.startswith(PAPERMILL_PREFIX)}
    unknown = sorted(names - known)
    if unknown:
        raise TypeError(f"papermill passed parameter(s) {unknown}, which {notebook!r} does "
                        f"not have (misspelt?); its parameters are {sorted(known)}")
    start = injected[-1] + 1  # up to the first check after it (a later run of a cell is fine)
    end = next((i for i in range(start, len(cells)) if "notebook_parameters(" in cells[i]),
               len(cells))
    again = sorted(names & set().union(*map(_assigned, cells[start:end])))
    if again:
        raise ValueError(
            f"{again} passed to papermill were set again by a later cell before this check, "
            f"so {notebook!r} would ignore them: its parameters cell has lost its "
            "'parameters' tag (papermill then injects its values above it). Tag that cell "
            "'parameters' (View > Cell Toolbar > Tags, or the cell's metadata)")
    return names


def _tagged_cell(nb, path: Path):
    """The one code cell of notebook ``nb`` (read from ``path``) tagged ``parameters``."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    stale = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1 or stale:
        fault = ("holds a stale 'injected-parameters' cell" if stale else
                 f"has {len(tagged)} code cells tagged 'parameters'")
        raise ValueError(f"notebook {path} {fault}; papermill needs exactly one, the cell "
                         "that sets the parameters, so that its values come after it "
                         "(tag that cell 'parameters' and no other)")
    return tagged[0]


def parameters_cell(path, passed=()) -> set[str]:
    """The names the parameters cell of the notebook file ``path`` sets.

    Parameters
    ----------
    path : str or Path
        A notebook (``.ipynb``).
    passed : iterable of str
        The names a caller will pass to papermill; each must be set in the cell.

    Returns
    -------
    set of str
        The names its one cell tagged ``parameters`` sets; ``ValueError`` when it has
        none or several, a stale ``injected-parameters`` cell, or lacks a ``passed`` name.
    """
    import nbformat

    path = Path(path)
    names = _assigned(_tagged_cell(nbformat.read(path, as_version=4), path).source)
    missing = sorted(set(passed) - names)
    if missing:
        raise ValueError(f"notebook {path}: its parameters cell does not set {missing}, which "
                         f"will be passed to it; it sets {sorted(names)}")
    return names


def _literal(value: Any) -> str:
    """``value`` as Python source, strings in double quotes (``"a"``, ``["a", 1.0]``)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return f"[{', '.join(map(_literal, value))}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _elsewhere(declared: Notebook, name: str, quick: Any) -> str:
    """The cpu and paper values of ``name`` where they differ from quick's, for a comment."""
    shown = {}
    for profile in PROFILES[1:]:
        value = declared.values(profile)[name]
        if value != quick:
            text = (", ".join(f"{k} {_literal(v)}" for k, v in value.items() if v != quick[k])
                    if isinstance(value, dict) else _literal(value))
            shown.setdefault(text if len(text) <= 40 or isinstance(value, dict)
                            else f"{len(value)} entries", []).append(
                profile)
    return "".join(f"; {', '.join(ps)}: {text}" for text, ps in shown.items())


def parameters_cell_source(notebook: str) -> str:
    """The source of ``notebook``'s parameters cell: a header, ``profile = "quick"``, each
    parameter with its quick value and, as a comment, its help and the cpu and paper values
    where they differ, the execution parameters' defaults, ``output_dir = None``.

    Parameters
    ----------
    notebook : str
        A key of :data:`NOTEBOOKS`.

    Returns
    -------
    str
        The cell's source (no trailing newline, as Jupyter stores it).
    """
    check_choice(notebook, "notebook", NOTEBOOKS)
    declared = NOTEBOOKS[notebook]
    quick = declared.values("quick")
    fields = declared.model.model_fields
    lines = {"profile": ('"quick"', "-p profile cpu|paper: that profile's value of every "
                                    "parameter not passed")}
    for name in declared.spec:
        lines[name] = (_literal(quick[name]),
                       fields[name].description + _elsewhere(declared, name, quick[name]))
    for name in declared.execution:
        lines[name] = (_literal(EXECUTION[name]), fields[name].description)
    lines["output_dir"] = ("None", OUTPUT_DIR_HELP)
    width = max(len(f"{n} = {v}") for n, (v, _) in lines.items() if len(v) <= 24)
    header = textwrap.wrap(
        "Parameters: the quick profile's values (papermill injects new ones below this "
        f"cell; all profiles in topofl_lib/profiles.toml). Profiles: {declared.notes}.",
        92, initial_indent="# ", subsequent_indent="# ", break_long_words=False,
        break_on_hyphens=False)
    return "\n".join([*header, *(f"{f'{n} = {v}':<{width}}  # {h}"
                                 for n, (v, h) in lines.items())])


def write_parameters_cell(path, notebook: str) -> bool:
    """Rewrite the parameters cell of the notebook file ``path`` (its source only).

    Parameters
    ----------
    path : str or Path
        A notebook (``.ipynb``) with one cell tagged ``parameters``.
    notebook : str
        Its key in :data:`NOTEBOOKS`.

    Returns
    -------
    bool
        Whether the file changed.
    """
    import nbformat

    source = parameters_cell_source(notebook)  # an unknown notebook before any file read
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    cell = _tagged_cell(nb, path)
    if cell.source == source:
        return False
    cell.source = source
    nbformat.write(nb, path)
    return True


def notebook_parameters(notebook: str, namespace: MutableMapping[str, Any]) -> NotebookParameters:
    """Validate a notebook's parameters and write the validated values back into ``namespace``.

    A notebook calls ``cfg = notebook_parameters("<name>", globals())`` after its parameters
    cell. Each of its parameters is read from ``namespace``; a name missing there takes
    ``profile``'s value (``profile`` itself defaults to ``"quick"``). Run by papermill with
    ``-p profile P``, every parameter papermill was not given takes ``P``'s value, not the
    cell's; a name papermill passed that the notebook lacks is refused. Only once everything
    is valid, each parameter's variable in ``namespace`` holds its validated value; other
    names (``profile``, ``output_dir``, the notebook's own) are left as they are.

    Parameters
    ----------
    notebook : str
        A key of :data:`NOTEBOOKS`.
    namespace : mutable mapping
        The notebook's variables (``globals()``), or a dict such as
        ``{"profile": "cpu", "n_seeds": 5, "output_dir": path}``.

    Returns
    -------
    NotebookParameters
        The values, the label (``cfg.profile``: the profile, or ``"custom"``) and the
        output folders; a bad value raises first (see :func:`~topofl_lib.notebook_models.validate`).
    """
    check_choice(notebook, "notebook", NOTEBOOKS)
    if not isinstance(namespace, MutableMapping):
        raise TypeError(f"namespace must be a mutable mapping such as globals(), got "
                        f"{namespace!r}")
    declared = NOTEBOOKS[notebook]
    profile = namespace.get("profile", "quick")
    if not isinstance(profile, str):
        raise TypeError(f"profile must be a string, got {profile!r}")
    defaults = declared.values(profile)
    names = [*declared.spec, *declared.execution]
    injected = _check_injected(notebook, {*COMMON, *names})
    given = {k: namespace[k] for k in names if k in namespace}
    if injected is not None and "profile" in injected:
        given = {k: v for k, v in given.items() if k in injected or k in declared.execution}
    checked = validate(declared.model, {**defaults, **given})
    label = profile if {k: checked[k] for k in defaults} == defaults else "custom"
    figures_dir, results_dir = output_dirs(namespace.get("output_dir"))
    namespace.update(checked)
    return NotebookParameters(notebook, label, checked, figures_dir, results_dir,
                              declared.claims)
