"""The README's result tables, rendered from the committed results by the publisher.

The README and the guides of ``docs/guide/`` (:func:`documents`) are Markdown; their
tables of results lie between ``<!-- topofl:begin NAME -->`` and
``<!-- topofl:end NAME -->`` lines (:func:`topofl_lib.traceability.sections` finds and
checks them); each is filled from ``results/`` by the function registered under
``NAME`` (:data:`SECTIONS`, :func:`register_section`): the claim rows, the paper's
values, and tables an executed notebook printed (:func:`notebook_tables`, read by
their row and column labels). Nothing outside the markers changes. :func:`write_readme`
rewrites the README atomically; the publisher calls it after regenerating
``claims.csv`` and ``comparison.md`` (:func:`topofl_lib.publish.write_readme_sections`),
and ``tests/test_traceability.py`` checks that the committed README equals a fresh
rendering (:func:`stale_sections`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from scipy.stats import t as student_t

from .claim_keys import METHOD_KEYS
from .outputs import write_text_atomic
from .prose import counted
from .studies.deep_ptopofl import DEEP_STAND_INS
from .studies.fedtopo import TABLE1_METHODS as FEDTOPO_TABLE1_METHODS
from .studies.privacy import README_DP_TARGET, epsilon_key
from .studies.table1 import METHODS_OF_TABLE1
from .traceability import (
    Section,
    cell_text,
    code_outputs,
    notebook_cells,
    paper_printed,
    read_csv_rows,
    sections,
)

__all__ = [
    "FEDTOPO_COMPARISON_HEADING",
    "GUIDES",
    "SECTIONS",
    "Table",
    "notebook_markdown",
    "notebook_tables",
    "register_section",
    "documents",
    "render_readme",
    "stale_sections",
    "write_readme",
]


#: The folder of the guides (Markdown, one page of the documentation site each), from
#: the repository root.
GUIDES = Path("docs") / "guide"


def documents(base) -> list[Path]:
    """The Markdown documents whose results are rendered and traced: the README, then
    the guides (``docs/guide/*.md``) in name order; those that exist.

    Parameters
    ----------
    base : str or Path
        The repository root.

    Returns
    -------
    list of Path
    """
    base = Path(base)
    return [p for p in [base / "README.md", *sorted((base / GUIDES).glob("*.md"))]
            if p.is_file()]


#: Section name -> function(results_dir) -> the section's Markdown.
SECTIONS: dict[str, Callable[[Path], str]] = {}


def register_section(name: str) -> Callable[[Callable[[Path], str]], Callable[[Path], str]]:
    """Register a README section renderer under ``name`` (a decorator).

    Parameters
    ----------
    name : str
        The name in the section's markers.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    ValueError
        ``name`` is not a word (letters, digits, ``_.-``) or is taken.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"name must be a word (letters, digits, '_', '.', '-'), got {name!r}")
    if name in SECTIONS:
        raise ValueError(f"name {name!r} is already registered")

    def decorator(func: Callable[[Path], str]) -> Callable[[Path], str]:
        SECTIONS[name] = func
        return func
    return decorator


def _body(name: str, results_dir: Path) -> str:
    """A section's text between its markers: blank line, Markdown, blank line (or empty)."""
    markdown = SECTIONS[name](results_dir).strip("\n")
    return f"\n{markdown}\n\n" if markdown else ""


def render_readme(readme_text: str, results_dir) -> str:
    """The README with every marked section rendered from the committed results.

    Only the text between the markers changes.

    Parameters
    ----------
    readme_text : str
        The README's text.
    results_dir : str or Path
        The ``results/`` folder.

    Returns
    -------
    str
        The new text.

    Raises
    ------
    SectionError
        The markers are malformed or name no renderer
        (:func:`topofl_lib.traceability.sections`).
    ValueError
        A renderer cannot find its numbers in a published notebook (the message names
        the notebook).
    TypeError
        ``readme_text`` is not a string.
    """
    results_dir = Path(results_dir)
    out, last = [], 0
    if not isinstance(readme_text, str):
        raise TypeError(f"readme_text must be a str, got {type(readme_text).__name__}")
    for section in sections(readme_text, SECTIONS):
        out += [readme_text[last:section.start], _body(section.name, results_dir)]
        last = section.end
    return "".join(out) + readme_text[last:]


def stale_sections(readme_text: str, results_dir) -> list[Section]:
    """The marked sections whose text differs from a fresh rendering.

    Parameters
    ----------
    readme_text : str
        The README's text.
    results_dir : str or Path
        The ``results/`` folder.

    Returns
    -------
    list of Section
        In order (empty: the README is as the publisher would write it).
    """
    results_dir = Path(results_dir)
    return [s for s in sections(readme_text, SECTIONS)
            if readme_text[s.start:s.end] != _body(s.name, results_dir)]


def write_readme(readme, results_dir) -> bool:
    """Re-render the README's sections and rewrite it atomically if they changed.

    Parameters
    ----------
    readme : str or Path
        The README (nothing happens without the file).
    results_dir : str or Path
        The ``results/`` folder.

    Returns
    -------
    bool
        Whether the file was rewritten.

    Raises
    ------
    SectionError
        The markers are malformed or name no renderer
        (:func:`topofl_lib.traceability.sections`).
    """
    readme = Path(readme)
    if not readme.exists():
        return False
    text = readme.read_text(encoding="utf-8")
    new = render_readme(text, results_dir)
    if new == text:
        return False
    write_text_atomic(readme, new)
    return True


# -- tables printed by executed notebooks ------------------------------------------


class _TableCells(HTMLParser):
    """The rows of every ``<table>`` of an HTML fragment: ``(text, colspan, rowspan, tag)``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict[str, list]] = []
        self._part = "body"
        self._row: list | None = None
        self._cell: list[str] | None = None
        self._span = (1, 1, "td")

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"head": [], "body": []})
        elif tag in ("thead", "tbody"):
            self._part = "head" if tag == "thead" else "body"
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("th", "td") and self._row is not None:
            a = dict(attrs)
            self._cell = []
            self._span = (int(a.get("colspan") or 1), int(a.get("rowspan") or 1), tag)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell).strip(), *self._span))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][self._part].append(self._row)
            self._row = None


@dataclass(frozen=True)
class Table:
    """A table an executed notebook printed (a pandas DataFrame's HTML), by labels.

    Attributes
    ----------
    cells : dict
        ``(row labels, column labels) -> text as printed``; labels are tuples of str
        (one per index or column level).
    cell : int
        The notebook cell that printed it.
    """

    cells: dict
    cell: int

    def columns(self) -> list[tuple[str, ...]]:
        """Its column labels, in order.

        Returns
        -------
        list of tuple of str
            One tuple per column.
        """
        return list(dict.fromkeys(col for _, col in self.cells))


def _body_rows(rows: list) -> list[list[tuple[str, str]]]:
    """Body rows with rowspans and colspans expanded: each a list of ``(text, tag)``."""
    out, pending = [], {}
    for row in rows:
        cells, cursor = [], iter(row)
        while True:
            col = len(cells)
            if col in pending:
                text, tag, left = pending.pop(col)
                if left > 1:
                    pending[col] = (text, tag, left - 1)
                cells.append((text, tag))
                continue
            cell = next(cursor, None)
            if cell is None:
                break
            text, colspan, rowspan, tag = cell
            for _ in range(colspan):
                if rowspan > 1:
                    pending[len(cells)] = (text, tag, rowspan - 1)
                cells.append((text, tag))
        out.append(cells)
    return out


def _table(raw: dict[str, list], cell: int) -> Table | None:
    body = _body_rows(raw["body"])
    if not body:
        return None
    n_index = next((i for i, (_, tag) in enumerate(body[0]) if tag == "td"), len(body[0]))
    width = len(body[0]) - n_index
    levels = [labels for row in raw["head"]
              if len(labels := [t for t, span, _, _ in row for _ in range(span)][n_index:])
              == width and any(labels)]
    columns = [tuple(level[j] for level in levels) for j in range(width)]
    cells = {(tuple(t for t, _ in row[:n_index]), columns[j]): text
             for row in body for j, (text, _) in enumerate(row[n_index:n_index + width])}
    return Table(cells, cell)


def notebook_tables(path) -> list[Table]:
    """Every table an executed notebook printed (its code cells' ``text/html`` outputs).

    Parameters
    ----------
    path : str or Path
        The executed notebook.

    Returns
    -------
    list of Table
        In order of cells.
    """
    found = []
    for index, output in code_outputs(Path(path)):
        fragment = (output.get("data") or {}).get("text/html")
        if fragment is not None:
            parser = _TableCells()
            parser.feed(cell_text(fragment))
            parser.close()
            found += [t for raw in parser.tables if (t := _table(raw, index)) is not None]
    return found


_HEADING_LINE = re.compile(r"(#+)[ \t]+\S")


def _heading_level(line: str) -> int:
    """The level of a Markdown heading line (0: not a heading)."""
    found = _HEADING_LINE.match(line)
    return len(found.group(1)) if found else 0


def notebook_markdown(path, heading: str) -> str:
    """The Markdown an executed notebook shows under one of its headings.

    The section begins with the Markdown cell whose first line is ``heading`` and ends
    before the next Markdown cell that begins with a heading of the same or a higher
    level. Its Markdown cells (the heading line left out) and its code cells'
    ``text/markdown`` outputs (prose rendered from the run, :func:`topofl_lib.prose.render`)
    are joined in order, one block each, separated by a blank line.

    Parameters
    ----------
    path : str or Path
        The executed notebook.
    heading : str
        The section's heading line, e.g. ``"## How this compares with the paper"``.

    Returns
    -------
    str
        The section's Markdown.

    Raises
    ------
    ValueError
        ``heading`` is not a Markdown heading, or the notebook has no such heading (the
        message names the notebook).
    """
    level = _heading_level(heading) if isinstance(heading, str) else 0
    if not level:
        raise ValueError(f"heading must be a Markdown heading line ('## Title'), got {heading!r}")
    blocks: list[str] | None = None  # None: the heading is still ahead
    for cell in notebook_cells(path):
        text = cell_text(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            first, _, rest = text.partition("\n")
            if blocks is None:
                blocks = [rest] if first.strip() == heading.strip() else None
                continue
            if 0 < _heading_level(first) <= level:
                break
            blocks.append(text)
        elif cell.get("cell_type") == "code" and blocks is not None:
            blocks += [cell_text(o["data"]["text/markdown"]) for o in cell.get("outputs", [])
                       if "text/markdown" in (o.get("data") or {})]
    if blocks is None:
        raise ValueError(f"notebook {str(path)!r} has no heading {heading!r}")
    return "\n\n".join(b.strip("\n") for b in blocks if b.strip())


# -- the README's sections ------------------------------------------------------------


@dataclass(frozen=True)
class _Claim:
    mean: float
    std: float
    n_seeds: int
    profile: str


def _claims(results_dir: Path) -> dict[str, _Claim]:
    """The rows of ``results/claims.csv`` by id ({} without the file)."""
    path = results_dir / "claims.csv"
    rows = read_csv_rows(path) if path.exists() else []
    return {r["id"]: _Claim(float(r["measured_mean"] or "nan"),
                            float(r["measured_std"] or "nan"),
                            int(float(r["n_seeds"] or 0)), r["profile"]) for r in rows}


def _mean_sd(mean: float, std: float, decimals: int) -> str:
    """``mean ± sd`` at ``decimals`` (``—`` for no value; the mean alone without an sd)."""
    if not math.isfinite(mean):
        return "—"
    return f"{mean:.{decimals}f}" + (f" ± {std:.{decimals}f}" if math.isfinite(std) else "")


def _row(cells: Sequence[str]) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def _table_lines(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [_row(header), "|" + "---|" * len(header), *map(_row, rows)]


def _printed_table(results_dir: Path, notebook: str, need: Callable[[Table], bool]
                   ) -> Table | None:
    """The last table the executed ``notebook`` printed that ``need`` accepts.

    None when the notebook is not published; a ValueError naming it when it is but
    printed no such table.
    """
    path = results_dir / "notebooks" / f"{notebook}.ipynb"
    if not path.exists():
        return None
    found = [t for t in notebook_tables(path) if need(t)]
    if not found:
        raise ValueError(f"{path} prints no table with the rows and columns the README's "
                         f"{notebook} section needs; render it from what the notebook prints")
    return found[-1]


def _column(table: Table | None, stat: str, prefix: str) -> tuple[str, ...] | None:
    """The column ``(stat, label)`` of ``table`` whose label starts with ``prefix``."""
    found = [c for c in (table.columns() if table else []) if len(c) == 2 and c[0] == stat
             and c[1].startswith(prefix)]
    return found[0] if len(found) == 1 else None


def _printed_number(text: str | None) -> float:
    try:
        return float(text) if text else math.nan
    except ValueError:
        return math.nan


def _t1_table(results_dir: Path, metric: str) -> list[str]:
    claims, paper = _claims(results_dir), paper_printed()
    rows = []
    for method in METHODS_OF_TABLE1:
        ids = {s: f"ptopofl.t1.{s}.{metric}.{METHOD_KEYS[method]}" for s in ("hc", "bm")}
        rows.append([method] + [c for s in ("hc", "bm") for c in
                                (paper.get(ids[s], ""), _claim_cell(claims, ids[s], 3))])
    for label, key in (("Local-only (explains the paper's FedAvg row)", "localonly"),
                       ("SCAFFOLD, v1.0.0 server rule (explains its SCAFFOLD row)",
                        "scaffold_v1")):
        rows.append([label] + [c for s in ("hc", "bm") for c in
                               ("", _claim_cell(claims, f"topofl.t1.{s}.{metric}.{key}", 3))])
    header = ["method", "healthcare: paper", "healthcare: paper's protocol",
              "benchmark: paper", "benchmark: paper's protocol"]
    return _table_lines(header, rows)


def _claim_cell(claims: Mapping[str, _Claim], cid: str, decimals: int,
                scale: float = 1.0) -> str:
    claim = claims.get(cid)
    return "—" if claim is None else _mean_sd(scale * claim.mean, scale * claim.std, decimals)


def _seeds_and_profiles(claims: Mapping[str, _Claim], prefix: str) -> tuple[str, str]:
    rows = [c for cid, c in claims.items() if cid.startswith(prefix)]
    seeds = sorted({c.n_seeds for c in rows})
    profiles = sorted({c.profile for c in rows})
    return "/".join(map(str, seeds)) or "—", ", ".join(f"`{p}`" for p in profiles) or "—"


@register_section("ptopofl_table1_auc")
def _ptopofl_table1_auc(results_dir: Path) -> str:
    """pTopoFL Table 1, final AUC under the paper's protocol, beside the paper's."""
    seeds, profiles = _seeds_and_profiles(_claims(results_dir), "ptopofl.t1.")
    caption = (f"Final-round AUC, mean ± sd over {seeds} seeds, the paper's protocol (the "
               f"committed run, {profiles} profile;\n`results/comparison.md` has every row):")
    return "\n".join([caption, "", *_t1_table(results_dir, "auc")])


@register_section("ptopofl_table1_acc")
def _ptopofl_table1_acc(results_dir: Path) -> str:
    """pTopoFL Table 1, final accuracy under the paper's protocol, beside the paper's."""
    return "\n".join(_t1_table(results_dir, "acc"))


_PARTITIONS = ("N", "L", "K", "Q")


def _has_fedtopo_t1(table: Table) -> bool:
    rows = {r for r, _ in table.cells}
    return {("FedProx",), ("SCAFFOLD",)} <= rows and all(
        _column(table, stat, f"fashion_mnist-{p}") for stat in ("mean", "std", "count")
        for p in _PARTITIONS)


def _diverged_cell(shown: str, finished: int, runs: int) -> str:
    """A Table 1 cell whose runs did not all finish: the mean and how many finished."""
    return f"{shown} ({finished} of {runs} seeds; the other {runs - finished} diverged)"


def _fedtopo_printed_cell(table: Table | None, method: str, part: str) -> str:
    """A Table 1 cell from the notebook's printed table: ``mean ± sd`` as printed or,
    where runs diverged, the mean of those that finished and how many did."""
    if table is None:
        return "—"
    mean, std, count = (_column(table, stat, f"fashion_mnist-{part}")
                        for stat in ("mean", "std", "count"))
    runs = max(_printed_number(v) for (_, c), v in table.cells.items() if c == count)
    finished = _printed_number(table.cells.get(((method,), count)))
    shown = table.cells.get(((method,), mean))
    if not math.isfinite(_printed_number(shown)):
        return "—"
    if finished < runs:
        return _diverged_cell(shown, int(finished), int(runs))
    spread = table.cells.get(((method,), std))
    return f"{shown} ± {spread}" if math.isfinite(_printed_number(spread)) else shown


def _fedtopo_claim_cell(claim: _Claim, n_runs: int) -> str:
    """A Table 1 cell from its claim row (no sd from one seed); where runs diverged, how
    many finished."""
    shown = _mean_sd(claim.mean, claim.std if claim.n_seeds > 1 else math.nan, 2)
    if not math.isfinite(claim.mean) or claim.n_seeds >= n_runs:
        return shown
    return _diverged_cell(shown, claim.n_seeds, n_runs)


@register_section("fedtopo_table1")
def _fedtopo_table1(results_dir: Path) -> str:
    """FedTopo Table 1 (FMNIST), ours beside the paper's, in the paper's order of methods:
    from the claim rows where they hold a value, else from the table the fedtopo notebook
    prints; a method with neither is left out."""
    claims, paper = _claims(results_dir), paper_printed()
    printed = _printed_table(results_dir, "fedtopo", _has_fedtopo_t1)
    measured = {cid: c for cid, c in claims.items()
                if cid.startswith("fedtopo.t1.fmnist.") and c.n_seeds > 0}
    n_runs = max((c.n_seeds for c in measured.values()), default=0)
    rows = []
    for method in FEDTOPO_TABLE1_METHODS:
        cells = [method]
        for part in _PARTITIONS:
            cid = f"fedtopo.t1.fmnist.{part}.{METHOD_KEYS[method]}"
            ours = (_fedtopo_claim_cell(measured[cid], n_runs) if cid in measured
                    else _fedtopo_printed_cell(printed, method, part))
            cells += [paper.get(cid, ""), ours]
        if any(c != "—" for c in cells[2::2]):
            rows.append(cells)
    profiles = ", ".join(f"`{p}`" for p in sorted({c.profile for c in measured.values()}))
    header = ["method"] + [h for p in _PARTITIONS for h in (f"{p}-skew: paper", "ours")]
    caption = (f"Final global test accuracy (%), mean ± sd over {counted(n_runs, 'seed')} "
               f"({profiles} profile); a cell with fewer "
               "seeds says why." if measured else
               "Final global test accuracy (%), as the fedtopo notebook printed it.")
    return "\n".join([caption, "", *_table_lines(header, rows)])


#: The heading of the fedtopo notebook's section that :func:`_fedtopo_comparison` quotes.
FEDTOPO_COMPARISON_HEADING = "## How this compares with the paper"


@register_section("fedtopo_comparison")
def _fedtopo_comparison(results_dir: Path) -> str:
    """The published fedtopo notebook's comparison with the paper, quoted: prose rendered
    from the run (:func:`notebook_markdown`), so the README's words follow its numbers."""
    path = results_dir / "notebooks" / "fedtopo.ipynb"
    if not path.exists():
        return ""
    text = notebook_markdown(path, FEDTOPO_COMPARISON_HEADING)
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


#: The deep pTopoFL table's columns: stand-in scenario, its Table 2 key (None: no paper
#: setting) and its heading.
_DEEP_COLUMNS = (
    ("cifar01", "FMNIST Dir(0.1) (paper CIFAR-10: {})"),
    ("cifar05", "FMNIST Dir(0.5) (paper: {})"),
    ("femnist", "MNIST-5k Dir(0.5) (paper FEMNIST: {})"),
    (None, "MNIST-5k Dir(0.1)"),
)
_DEEP_EXTRA_SCENARIO = "mnist5k-L0.1"
_DEEP_METHODS = ("FedAvg", "FedProx", "SCAFFOLD", "pFedMe", "pTopoFL")


def _deep_scenario(key: str | None) -> str:
    """The printed table's column of a stand-in: its scenario's name."""
    if not key:
        return _DEEP_EXTRA_SCENARIO
    dataset, partition, param = DEEP_STAND_INS[key][0]
    return f"{dataset}-{partition}{param:g}"


def _has_deep_table(table: Table) -> bool:
    return all(((m,), (stat, _deep_scenario(k))) in table.cells for m in _DEEP_METHODS
               for stat in ("mean", "std") for k, _ in _DEEP_COLUMNS)


def _deep_heading(key: str | None, heading: str, paper: Mapping[str, str]) -> str:
    if key is None:
        return heading
    values = [paper.get(f"ptopofl.t2.{key}.{m}") for m in ("fedavg", "ptopofl")]
    shown = " / ".join(f"{100 * float(v):.{max(0, len(v.partition('.')[2]) - 2)}f}"
                       if v else "—" for v in values)
    return heading.format(shown)


def _deep_cell(claims, printed: Table | None, method: str, key: str | None) -> str:
    cid = f"ptopofl.t2.{key}.{METHOD_KEYS[method]}" if key else None
    if cid in claims:
        return _claim_cell(claims, cid, 2, scale=100.0)
    if printed is None:
        return "—"
    scenario = _deep_scenario(key)
    mean, std = (printed.cells[((method,), (stat, scenario))] for stat in ("mean", "std"))
    return f"{mean} ± {std}"


@register_section("ptopofl_deep_table2")
def _ptopofl_deep_table2(results_dir: Path) -> str:
    """The deep pTopoFL stand-in table (personalised accuracy, %): the claim rows where
    Table 2 has an id, the table the ptopofl_deep notebook prints for the others."""
    claims, paper = _claims(results_dir), paper_printed()
    printed = _printed_table(results_dir, "ptopofl_deep", _has_deep_table)
    header = ["method"] + [_deep_heading(k, h, paper) for k, h in _DEEP_COLUMNS]
    rows = [[m] + [_deep_cell(claims, printed, m, k) for k, _ in _DEEP_COLUMNS]
            for m in _DEEP_METHODS]
    return "\n".join(_table_lines(header, rows))


#: The README's end-to-end DP sentence until the privacy notebook's rows are published.
_DP_PENDING = ("**End-to-end DP, in one number.** The per-client ε of a whole private pTopoFL "
               "run on Scenario A and what it costs in AUC are rendered here from "
               "`results/claims.csv` once the privacy notebook's `topofl.dp.*` rows are "
               "published.")


@register_section("ptopofl_dp_cost")
def _ptopofl_dp_cost(results_dir: Path) -> str:
    """The per-client epsilon of a whole private pTopoFL run (Scenario A, the paper's
    protocol, target :data:`~topofl_lib.studies.privacy.README_DP_TARGET`) and its cost
    in final AUC, from the ``topofl.dp.t1.hc.*`` claim rows."""
    claims = _claims(results_dir)
    prefix = f"topofl.dp.t1.hc.{epsilon_key(README_DP_TARGET)}"
    rows = [claims.get(f"{prefix}.{what}.ptopofl") for what in ("epsilon", "cost", "auc")]
    clear = claims.get("topofl.dp.t1.hc.nodp.auc.ptopofl")
    if clear is None or any(r is None for r in rows):
        return _DP_PENDING
    spent, cost, private = rows
    server = claims.get(f"{prefix}.epsilon_server.ptopofl")
    n = int(cost.n_seeds)
    half = (float(student_t.ppf(0.975, n - 1)) * cost.std / math.sqrt(n) if n > 1
            else math.nan)
    return ("**End-to-end DP, in one number.** A whole pTopoFL run on Scenario A under the "
            "paper's protocol (15 rounds; the models by client-level DP-FedAvg, every update "
            f"clipped to L2 norm 1 and {_noised(server)}; the descriptors by the Gaussian "
            "mechanism at each client, calibrated to a tenth of the budget), with its noise "
            f"calibrated to a target of ε = {README_DP_TARGET:g} per client at δ = 10⁻⁵ "
            "(neighbouring federations: one client added or removed), spends "
            f"ε = {spent.mean:.2f} per client for both channels and all rounds together "
            "(Opacus's PRV accountant), and changes the final AUC by "
            f"{cost.mean:.3f} (private minus non-private, paired over {n} seeds: standard "
            f"deviation {cost.std:.3f}, 95% t-interval of the mean difference "
            f"{cost.mean - half:.3f} to {cost.mean + half:.3f}; {clear.mean:.3f} without DP, "
            f"{private.mean:.3f} with it; `{cost.profile}` profile). {_against_server(server)} "
            "`results/comparison.md` has every target, FedAvg, the benchmark, the deep runs "
            "and the audit (`topofl.dp.*`).")


def _noised(server) -> str:
    """Where the README's DP run drew the models' noise: by the clients (distributed DP,
    the rows with an epsilon against the server) or by the server (central DP)."""
    return ("noised by the clients, each adding its share of the noise before sending"
            if server is not None else "noised at the server")


def _against_server(server) -> str:
    """Whom the README's epsilon holds against, and the epsilon against the server."""
    if server is None:
        return ("The models' ε holds against whoever sees what the server releases, not "
                "against the server itself, which sees each clipped update before it adds "
                "the noise (central DP: a trusted server); the descriptors' share holds "
                "against the server too.")
    return ("That ε holds against whoever sees what the server releases. The server itself "
            "never holds an un-noised update, but without secure aggregation it sees each "
            "one with only that client's share of the noise: against the server a client "
            f"spends ε = {server.mean:.2f} (both channels; the descriptors are noised at the "
            "client too).")


def _markdown_of(value) -> str:
    """A renderer's result as Markdown: a string as it is, a DataFrame as a pipe table."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    frame = value.reset_index() if getattr(value.index, "name", None) else value
    return "\n".join(_table_lines([str(c) for c in frame.columns],
                                  [[str(v) for v in row] for row in frame.to_numpy()]))


@register_section("coverage")
def _coverage(results_dir: Path) -> str:
    """What the published claims cover: rows per paper and protocol, and how many of
    the papers' numbers have a measured row (from ``claims.csv``, as published)."""
    import pandas as pd

    from .claims_summary import coverage_table, coverage_totals, protocol_counts

    summary = pd.read_csv(Path(results_dir) / "claims.csv", dtype={"id": str})
    if "protocol" not in summary:
        return ""  # published before protocols were assigned: re-publish the summary
    totals = coverage_totals(coverage_table(summary))
    n, measured = int(totals.loc["all", "numbers"]), int(totals.loc["all", "measured"])
    like = int(totals.loc["all", "measured_paper"])
    return (f"**What the comparison covers.** The three papers print {n} numbers; {measured} "
            "of them have a measured row in [`results/comparison.md`](results/comparison.md), "
            f"{like} of those under the paper's own protocol. Every row says which protocol it "
            "ran: `paper` (the paper's data, federation, rounds and at least its seed count), "
            "`reduced` (the paper's data, less compute or fewer seeds), `stand-in` (other "
            "data or another federation), `not run` (with the reason). Rows per paper and "
            "protocol (`topofl.*` rows go beyond the papers):\n\n"
            + _markdown_of(protocol_counts(summary).rename_axis("rows of")) + "\n\n"
            "The papers' numbers per paper, measured or not (per table and figure, with the "
            "reason for each number without a row, in `results/comparison.md`):\n\n"
            + _markdown_of(totals.rename(columns={
                "measured_paper": "of them `paper`", "measured_reduced": "`reduced`",
                "measured_stand_in": "`stand-in`", "not_measured": "not measured"})))
