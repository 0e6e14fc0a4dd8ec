"""One source for every measured number: prose traced to the committed results.

Used by ``tests/test_traceability.py`` and by :mod:`topofl_lib.readme_sections`.

**Tracing prose numbers** (:func:`numbers`, :class:`Pool`, :func:`untraced`,
:func:`untraced_readme`, :func:`untraced_notebook`). The rules:

- *A measured number has a decimal point* (``0.842``, ``+9.55``, ``−3.6``,
  ``12,000.5``, ``2.5%``) or an exponent (``6e-17``, ``3.8 × 10^12``). Integers
  without one (counts of seeds, clients, rounds, images; years) are not taken for
  measurements. Nor is anything in Markdown code (fenced blocks, inline code), a link
  or image target, an HTML tag or comment, a URL, a dotted version (``2.13.0``) or a
  number glued to a word (``fig2``, ``dir0.1_curves``). A sign is a sign only where it
  does not follow a digit or a letter (``0.045-0.084`` is a range of two positive
  numbers); ``−`` (U+2212) is a minus.
- *A number is traced* when some source value, rounded to the number's printed
  precision (its decimals), equals it: ``|source - number| <= 0.5 * 10**-decimals``
  (a tie may round either way). The source must be printed with at least as many
  decimals: a prose number may be a rounding of a more precise source, never the
  reverse (a source printed ``0.097`` traces a prose ``0.10`` and ``0.1``; a source
  printed ``0.1`` traces neither ``0.097`` nor ``0.10``).
- Besides its value, a source traces through its *absolute value* (a prose ``+9.55``
  or ``9.55`` may state a difference printed ``-0.0955`` the other way round; a prose
  number printed with a minus needs a negative source) and, where the number is a
  percentage (it carries ``%``, or its paragraph speaks of ``%``, percent or points),
  through its value ×100, with two decimals fewer (``0.0955`` traces ``9.55``).
- *The sources of an executed notebook's prose* are its own code-cell outputs
  (stream text, ``text/plain``, ``text/html`` tables, ``text/markdown``,
  ``text/latex``), the claim files ``results/manifest.json`` lists for it and the
  papers' values (``topofl_lib/paper_claims.csv``); every Markdown cell is checked.
- *The sources of the README*: a section (under a ``#`` heading) whose text names
  notebooks in a command (``reproduce ... --only NAME ...``, outside fenced code)
  draws on those notebooks' sources only, as above; its subsections inherit them.
  Every other section draws on the committed files: ``results/claims.csv`` (means
  and sds), the papers' values, ``results/environment.json`` and
  ``results/manifest.json``. Outputs are read at their printed precision; the claim
  files are written with ``%.6g`` and read with six significant digits.
- *Not measured*: section references (``Sec. 4.6``) and the identifiers of a paper's
  reference (``arXiv:2603.04323``, a DOI), :data:`NOT_MEASURED`; and in the README the
  patterns of :data:`README_ALLOWED` (versions, a historical timing, the paper's own
  differences) and the sections of :data:`README_EXEMPT` (benchmark
  timings that no committed file records), each with its reason. Nothing else is
  exempt. The README's rendered sections are checked by equality with a fresh
  rendering instead (:func:`topofl_lib.readme_sections.stale_sections`).

The rule says a number *could* come from a source of its file, not that it comes from
the right one: a wrong number that happens to round from another value of the same
notebook passes. That is why the README's tables are rendered, not typed.

**README sections** (:func:`sections`): the README's result tables lie between
``<!-- topofl:begin NAME -->`` and ``<!-- topofl:end NAME -->`` lines; they are not
typed but rendered from the committed results by :mod:`topofl_lib.readme_sections`,
and checked by equality with a fresh rendering, not number by number.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "NOT_MEASURED",
    "README_ALLOWED",
    "README_EXEMPT",
    "Number",
    "Pool",
    "Section",
    "SectionError",
    "Untraced",
    "cell_text",
    "code_outputs",
    "notebook_cells",
    "notebook_pool",
    "paper_printed",
    "read_csv_rows",
    "numbers",
    "readme_pools",
    "sections",
    "untraced",
    "untraced_notebook",
    "untraced_readme",
]

MINUS = "\u2212"
_SIGNS = {"+": 1.0, "-": -1.0, MINUS: -1.0}
_DIGITS = (r"(?P<int>\d{1,3}(?:,\d{3})+(?=\.)|\d+)(?:\.(?P<frac>\d+))?"
           rf"(?:[eE](?P<exp>[+\-{MINUS}]?\d+))?")
#: A number in prose: not glued to a word, a number or a version on either side.
_PROSE_NUMBER = re.compile(
    rf"(?<![\w.])(?<!\d,)(?P<sign>[+\-{MINUS}](?=\d))?{_DIGITS}(?!\d|[.,]\d)"
    rf"(?:\s?[\u00d7\u00b7]\s?10\^(?P<exp10>[+\-{MINUS}]?\d+))?(?P<pct>%)?")
#: A number in a source (an output, a file): may follow a letter (``N1.416``, ``L0.1``).
_SOURCE_NUMBER = re.compile(
    rf"(?<![\d.])(?:(?<![\w)])(?P<sign>[+\-{MINUS}](?=\d)))?{_DIGITS}(?!\d|\.\d)(?P<pct>%)?")
_VERSION = re.compile(r"\d+(?:\.\d+){2,}")
_PERCENT_WORDS = re.compile(r"%|\bpercent|\bpoints?\b", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_FENCED = re.compile(r"^(?P<fence>```|~~~).*?^(?P=fence)[^\n]*$", re.MULTILINE | re.DOTALL)
#: What is not prose in Markdown besides fenced code: inline code, HTML comments and
#: tags, link and image targets, bare URLs.
_INLINE_CODE = re.compile(r"(?P<ticks>`+)[^\n]*?(?P=ticks)")
_NOT_PROSE = re.compile(
    _INLINE_CODE.pattern + r"|<!--.*?-->|</?[A-Za-z][^>\n]*>|\]\([^)\n]*\)|https?://\S+",
    re.DOTALL)


@dataclass(frozen=True)
class Number:
    """A number as printed in a text.

    Attributes
    ----------
    text : str
        The number as printed (sign, ``× 10^k`` and ``%`` included).
    value : float
        Its value, sign included (a percentage is not divided by 100).
    decimals : int
        Its printed precision: the digits after the decimal point, less the exponent.
    percent : bool
        Whether it carries a ``%``.
    start, end : int
        Its position in the text.
    line : int
        The line it sits on (1-based).
    """

    text: str
    value: float
    decimals: int
    percent: bool
    start: int
    end: int
    line: int


def _number(match: re.Match, text: str) -> Number:
    frac = match["frac"] or ""
    exponent = int((match["exp"] or "0").replace(MINUS, "-"))
    if "exp10" in match.re.groupindex and match["exp10"]:
        exponent += int(match["exp10"].replace(MINUS, "-"))
    magnitude = float(f"{match['int'].replace(',', '')}.{frac or '0'}e{exponent}")
    return Number(text=match.group(0), value=_SIGNS[match["sign"] or "+"] * magnitude,
                  decimals=len(frac) - exponent, percent=bool(match["pct"]),
                  start=match.start(), end=match.end(),
                  line=text.count("\n", 0, match.start()) + 1)


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _mask(text: str) -> str:
    """``text`` with everything that is not Markdown prose blanked (lines kept)."""
    return _NOT_PROSE.sub(_blank, _FENCED.sub(_blank, text))


def _check_text(value, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def numbers(text: str, *, markdown: bool = True) -> list[Number]:
    """Every decimal number of a text, with its printed precision, position and line.

    Parameters
    ----------
    text : str
        The text (Markdown prose, by default).
    markdown : bool, default True
        Skip what is not prose in Markdown: fenced and inline code, HTML comments and
        tags, link and image targets, URLs. Positions still refer to ``text``.

    Returns
    -------
    list of Number
        In order of position. Integers without a decimal point or exponent, dotted
        versions and numbers glued to a word are left out (see the module docstring).

    Raises
    ------
    TypeError
        ``text`` is not a string.

    Examples
    --------
    >>> [(n.value, n.decimals) for n in numbers("AUC 0.842 \u2212 0.05 over 20 seeds, 2.5%")]
    [(0.842, 3), (0.05, 2), (2.5, 1)]
    >>> [n.value for n in numbers("from \u22121.83 to +0.87, 0.045-0.084")]
    [-1.83, 0.87, 0.045, 0.084]
    """
    scanned = _mask(_check_text(text, "text")) if markdown else _check_text(text, "text")
    return [_number(m, text) for m in _PROSE_NUMBER.finditer(scanned)
            if (m["frac"] is not None or m["exp"] is not None or m["exp10"] is not None)
            and not _VERSION.match(scanned, m.start("int"))]


def _source_numbers(text: str) -> list[tuple[float, int]]:
    """``(value, decimals)`` of every number printed in an output or a file."""
    return [(n.value, n.decimals) for n in
            (_number(m, text) for m in _SOURCE_NUMBER.finditer(text)
             if not _VERSION.match(text, m.start("int")))]


class Pool:
    """Source values with their printed precision, each with where it came from.

    Parameters
    ----------
    name : str, optional
        What the pool holds, for messages.
    """

    def __init__(self, name: str = "sources"):
        self.name = name
        self._values: list[float] = []
        self._decimals: list[int] = []
        self._origins: list[str] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def add(self, values: Iterable[tuple[float, int]], origin: str) -> Pool:
        """Add ``(value, decimals)`` pairs found in ``origin`` (non-finite ones are skipped).

        Parameters
        ----------
        values : iterable of (float, int)
            Each value with its printed precision.
        origin : str
            Where they come from (a file, a notebook cell).

        Returns
        -------
        Pool
            ``self``.
        """
        for value, decimals in values:
            if math.isfinite(value):
                self._values.append(float(value))
                self._decimals.append(int(decimals))
                self._origins.append(origin)
        self._arrays = None
        return self

    def add_text(self, text: str, origin: str) -> Pool:
        """Add every number printed in ``text`` (an output, a file), at its precision.

        Parameters
        ----------
        text : str
            The printed text.
        origin : str
            Where it comes from.

        Returns
        -------
        Pool
            ``self``.
        """
        return self.add(_source_numbers(text), origin)

    def extend(self, other: Pool) -> Pool:
        """Add every value of ``other``.

        Parameters
        ----------
        other : Pool
            Another pool.

        Returns
        -------
        Pool
            ``self``.
        """
        self._values += other._values
        self._decimals += other._decimals
        self._origins += other._origins
        self._arrays = None
        return self

    def trace(self, number: Number, percent: bool | None = None) -> str | None:
        """Where ``number`` comes from (the first source that traces it), or None.

        Parameters
        ----------
        number : Number
            A prose number.
        percent : bool, optional
            Whether a source's value ×100 may trace it (default: ``number.percent``).

        Returns
        -------
        str or None
            The origin of a source value that traces it; None if none does.
        """
        if self._arrays is None:
            self._arrays = (np.asarray(self._values, dtype=np.float64),
                            np.asarray(self._decimals, dtype=np.int64))
        values, decimals = self._arrays
        tol = 0.5 * 10.0 ** -number.decimals * (1 + 1e-9) + 1e-12 * max(1.0, abs(number.value))
        percent = number.percent if percent is None else percent
        for scale, fewer in ((1.0, 0), (100.0, 2)) if percent else ((1.0, 0),):
            scaled = values * scale
            close = np.abs(scaled - number.value) <= tol
            if number.value >= 0:
                close |= np.abs(np.abs(scaled) - number.value) <= tol
            hit = np.flatnonzero(close & (decimals - fewer >= number.decimals))
            if hit.size:
                return self._origins[hit[0]]
        return None


# -- sources -------------------------------------------------------------------------


def _g6(text: str) -> tuple[float, int] | None:
    """A value written with ``%.6g`` (a claim file), at six significant digits."""
    try:
        value = float(text)
    except ValueError:
        return None
    if value == 0 or not math.isfinite(value):
        return value, 15  # %.6g writes "0" only for an exact zero
    printed = len(text.lower().split("e")[0].partition(".")[2])
    return value, max(printed, 5 - math.floor(math.log10(abs(value))))


def read_csv_rows(path) -> list[dict[str, str]]:
    """The rows of a CSV file as text, by column name.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    list of dict
        One ``{column: text}`` per row.
    """
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _claim_values(path: Path) -> list[tuple[float, int]]:
    """The measured means and sds of a claim file, at their written precision."""
    found = (_g6(row.get(col) or "") for row in read_csv_rows(path)
             for col in ("measured_mean", "measured_std"))
    return [v for v in found if v is not None]


def paper_printed() -> dict[str, str]:
    """The papers' values as ``topofl_lib/paper_claims.csv`` prints them.

    Returns
    -------
    dict
        Claim id -> the value's text (ids without a value are left out).
    """
    text = resources.files("topofl_lib").joinpath("paper_claims.csv").read_text(
        encoding="utf-8")
    return {row["id"]: row["value"] for row in csv.DictReader(io.StringIO(text))
            if row["value"]}


def _paper_values() -> list[tuple[float, int]]:
    """The papers' values (``paper_claims.csv``), at their printed precision."""
    printed = paper_printed().values()
    return [(float(v), len(v.partition(".")[2])) for v in printed if _is_number(v)]


def _is_number(text: str) -> bool:
    """A printed value that is a number (the papers also print ``O(p)`` and the like)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _json_values(value, out: list[tuple[float, int]]) -> list[tuple[float, int]]:
    if isinstance(value, dict):
        for item in value.values():
            _json_values(item, out)
    elif isinstance(value, list):
        for item in value:
            _json_values(item, out)
    elif isinstance(value, float):
        out.append((value, len(repr(value).partition(".")[2])))
    elif isinstance(value, str):
        out.extend(_source_numbers(value))
    return out


class _TextOfHTML(HTMLParser):
    """The text of an HTML fragment, elements separated by spaces (no style, script)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("style", "script")
        self.parts.append(" ")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("style", "script") and self._hidden > 0
        self.parts.append(" ")

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def _html_text(fragment: str) -> str:
    parser = _TextOfHTML()
    parser.feed(fragment)
    parser.close()
    return "".join(parser.parts)


def cell_text(value) -> str:
    """A notebook field stored as one string or as a list of lines, as one string.

    Parameters
    ----------
    value : str or list of str
        A cell's ``source`` or an output's text, as nbformat stores it.

    Returns
    -------
    str
        The lines joined.
    """
    return "".join(value) if isinstance(value, list) else str(value)


def _output_texts(output: Mapping) -> Iterable[str]:
    """The printed texts of one code-cell output."""
    if output.get("output_type") == "stream":
        yield cell_text(output.get("text", ""))
    data = output.get("data") or {}
    for mime in ("text/plain", "text/markdown", "text/latex"):
        if mime in data:
            yield cell_text(data[mime])
    if "text/html" in data:
        yield _html_text(cell_text(data["text/html"]))


def notebook_cells(path) -> list[dict]:
    """The cells of a notebook file, as nbformat's JSON stores them.

    Parameters
    ----------
    path : str or Path
        A notebook (``.ipynb``).

    Returns
    -------
    list of dict
        Its cells, in order.

    Raises
    ------
    ValueError
        The file cannot be read as JSON or holds no list of cells (the message names it).
    """
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"notebook {str(path)!r} cannot be read: {exc}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"notebook {str(path)!r} has no list of cells")
    return nb["cells"]


def code_outputs(path) -> Iterable[tuple[int, Mapping]]:
    """Every output of an executed notebook's code cells.

    Parameters
    ----------
    path : str or Path
        An executed notebook (``.ipynb``).

    Yields
    ------
    tuple of (int, dict)
        The cell's index and one of its outputs (nbformat's JSON).
    """
    for index, cell in enumerate(notebook_cells(path)):
        if cell.get("cell_type") == "code":
            for output in cell.get("outputs", []):
                yield index, output


def notebook_pool(path, results_dir) -> Pool:
    """The sources of an executed notebook's prose.

    Its own code-cell outputs, the claim files ``results/manifest.json`` lists for it
    and the papers' values.

    Parameters
    ----------
    path : str or Path
        The executed notebook (``results/notebooks/<name>.ipynb``).
    results_dir : str or Path
        The ``results/`` folder it was published to.

    Returns
    -------
    Pool
        Its sources.
    """
    path, results_dir = Path(path), Path(results_dir)
    pool = Pool(path.stem)
    for index, output in code_outputs(path):
        for text in _output_texts(output):
            pool.add_text(text, f"{path.name} cell {index}")
    manifest = results_dir / "manifest.json"
    record = json.loads(manifest.read_text(encoding="utf-8")) if manifest.exists() else {}
    for rel in record.get(path.stem, {}).get("files", []):
        claim_file = results_dir.parent / rel
        if rel.startswith("results/claims/") and claim_file.exists():
            pool.add(_claim_values(claim_file), rel)
    return pool.add(_paper_values(), "topofl_lib/paper_claims.csv")


def readme_pools(results_dir) -> tuple[Pool, dict[str, Pool]]:
    """The sources of the README: the committed files, and each executed notebook's.

    Parameters
    ----------
    results_dir : str or Path
        The ``results/`` folder.

    Returns
    -------
    (Pool, dict of str to Pool)
        The files' values (``claims.csv`` means and sds, the papers' values,
        ``environment.json``, ``manifest.json``), and each executed notebook's
        :func:`notebook_pool` by name.
    """
    results_dir = Path(results_dir)
    files = Pool("results files")
    if (results_dir / "claims.csv").exists():
        files.add(_claim_values(results_dir / "claims.csv"), "results/claims.csv")
    files.add(_paper_values(), "topofl_lib/paper_claims.csv")
    for name in ("environment.json", "manifest.json"):
        if (results_dir / name).exists():
            data = json.loads((results_dir / name).read_text(encoding="utf-8"))
            files.add(_json_values(data, []), f"results/{name}")
    notebooks = {p.stem: notebook_pool(p, results_dir)
                 for p in sorted((results_dir / "notebooks").glob("*.ipynb"))}
    return files, notebooks


# -- checking ------------------------------------------------------------------------


@dataclass(frozen=True)
class Untraced:
    """A prose number that no source traces.

    Attributes
    ----------
    path : str
        The file.
    line : int
        Its line (in a notebook: within the cell).
    number : str
        The number as printed.
    context : str
        The line it sits on (at most 160 characters around the number).
    cell : int or None
        The notebook cell (None in a Markdown file).
    """

    path: str
    line: int
    number: str
    context: str
    cell: int | None = None

    def __str__(self) -> str:
        cell = "" if self.cell is None else f" cell {self.cell}"
        return (f"{self.path}{cell} line {self.line}: {self.number!r} traces to no "
                f"source: {self.context}")


#: Numbers that are not measurements wherever they appear: ``(regex, reason)``; a
#: number inside a match on its line is not checked.
NOT_MEASURED: tuple[tuple[str, str], ...] = (
    (r"\b(?:Sec(?:tion)?s?\.?|§)\s*\d+(?:\.\d+)*(?:\s*(?:[-–,/]|and)\s*\d+(?:\.\d+)*)*",
     "a reference to a section of a paper"),
    (r"\barXiv:\d{4}\.\d{4,5}(?:v\d+)?", "an arXiv identifier (a paper's reference)"),
    (r"\b(?:doi:)?10\.\d{4,9}/\S+", "a DOI (a paper's reference)"),
)

#: README numbers that are not measurements, or not ours: ``(regex on the line,
#: reason)``. A number inside a match is not checked.
README_ALLOWED: tuple[tuple[str, str], ...] = (
    (r"Python ≥ 3\.11", "the lowest Python version supported"),
    (r"CPython 3\.11", "the Python version the lock file is compiled for"),
    (r"the committed runs: [^)|]*", "wall-clock durations of the committed runs; "
     "results/environment.json records when each notebook finished, not how long it ran"),
    (r"\bflwr 1\.42\b", "the Flower version the opt-in fast-waits adapter is written for"),
    (r"round on an NVIDIA H100 \(measured[^|]*", "timings of benchmarks/bench_deep_gpu.py "
     "on a lent GPU and on this CPU, recorded in benchmarks/results/*.json, not in results/"),
    (r"loop lives 0\.005 instead of 1\.27", "a property of the triangle approximation "
     "on the unit circle (topofl_lib.topology.persistence), not a published result"),
)

#: README sections (heading regex) whose numbers no committed file records, with why.
README_EXEMPT: tuple[tuple[str, str], ...] = (
    (r"How to explore", "interaction times of the explorer, measured by hand and by "
     "tests/test_explorer_browser.py"),
    (r"From notebooks to real clients \(Flower\)", "Flower's version, settings, a test "
     "tolerance and round timings of benchmarks/flower_rounds.py and tests/test_flower.py"),
    (r"Speed", "timings of benchmarks/*.py on the 2-core machine"),
)


def _line_of(text: str, pos: int) -> tuple[int, str]:
    """``(start, text)`` of the line holding position ``pos``."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, text[start:end if end >= 0 else len(text)]


def _paragraph(text: str, number: Number) -> str:
    """The paragraph (text between blank lines) ``number`` sits in."""
    starts = [m.end() for m in _BLANK_LINE.finditer(text, 0, number.start)]
    end = _BLANK_LINE.search(text, number.end)
    return text[starts[-1] if starts else 0:end.start() if end else len(text)]


def _allowed(text: str, number: Number, allowed: Sequence[tuple[str, str]]) -> bool:
    start, line = _line_of(text, number.start)
    col = number.start - start
    return any(m.start() <= col < m.end() for pattern, _ in allowed
               for m in re.finditer(pattern, line))


def _context(text: str, number: Number) -> str:
    start, line = _line_of(text, number.start)
    lo = max(0, number.start - start - 80)
    return line[lo:lo + 160].strip()


def untraced(text: str, pool: Pool | Callable[[Number], Pool], path: str = "<text>", *,
             allowed: Sequence[tuple[str, str]] = NOT_MEASURED,
             skip: Sequence[range] = (), cell: int | None = None) -> list[Untraced]:
    """The decimal numbers of a Markdown text that no source traces.

    Parameters
    ----------
    text : str
        Markdown prose.
    pool : Pool or callable
        The sources, or a function giving the sources of each :class:`Number`.
    path : str, optional
        The file's name, for the report.
    allowed : sequence of (str, str), optional
        ``(regex, reason)`` pairs (default :data:`NOT_MEASURED`): a number inside a
        match of a regex on its line is not checked.
    skip : sequence of range, optional
        Character ranges not to check (rendered and exempt sections).
    cell : int, optional
        The notebook cell, for the report.

    Returns
    -------
    list of Untraced
        In order of position.

    Raises
    ------
    TypeError
        ``text`` is not a string, or ``pool`` neither a Pool nor callable.
    """
    if not (isinstance(pool, Pool) or callable(pool)):
        raise TypeError(f"pool must be a Pool or a function of a Number, got "
                        f"{type(pool).__name__}")
    found = []
    for number in numbers(text):
        if any(number.start in r for r in skip) or _allowed(text, number, allowed):
            continue
        sources = pool if isinstance(pool, Pool) else pool(number)
        percent = number.percent or bool(_PERCENT_WORDS.search(_paragraph(text, number)))
        if sources.trace(number, percent) is None:
            found.append(Untraced(path, number.line, number.text, _context(text, number),
                                  cell))
    return found


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def untraced_notebook(path, results_dir, *, allowed: Sequence[tuple[str, str]] = NOT_MEASURED
                      ) -> list[Untraced]:
    """The numbers of an executed notebook's Markdown cells that no source traces.

    Parameters
    ----------
    path : str or Path
        The executed notebook.
    results_dir : str or Path
        The ``results/`` folder it was published to (:func:`notebook_pool`).
    allowed : sequence of (str, str), optional
        Patterns of numbers that are not measurements (default :data:`NOT_MEASURED`).

    Returns
    -------
    list of Untraced
        With the cell and the line within it.
    """
    path = Path(path)
    pool = notebook_pool(path, results_dir)
    found = []
    for index, cell in enumerate(notebook_cells(path)):
        if cell.get("cell_type") == "markdown":
            found += untraced(cell_text(cell.get("source", "")), pool, _shown(path),
                              allowed=allowed, cell=index)
    return found


_COMMAND_NOTEBOOKS = re.compile(r"--only((?:\s+[a-z_0-9]+)+)")
_HEADING = re.compile(r"^(#+)[ \t]+(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class _Part:
    """A heading section of a Markdown text: its span, level, title and notebooks."""

    start: int
    end: int
    level: int
    title: str
    notebooks: tuple[str, ...]


def _parts(text: str) -> list[_Part]:
    """The text's heading sections, the text before the first heading included.

    A section spans its subsections; it names the notebooks of the ``--only`` commands
    in its own text (outside fenced code), or else inherits its parent's.
    """
    unfenced = _FENCED.sub(_blank, text)
    heads = [(0, 0, "")] + [(m.start(), len(m.group(1)), m.group(2).strip())
                            for m in _HEADING.finditer(unfenced)]
    parts, named = [], {}
    for i, (start, level, title) in enumerate(heads):
        later = heads[i + 1:]
        own_end = later[0][0] if later else len(text)
        end = next((s for s, lv, _ in later if lv <= level), len(text)) if level else own_end
        own = tuple(sorted({n for m in _COMMAND_NOTEBOOKS.finditer(unfenced[start:own_end])
                            for n in m.group(1).split()}))
        named = {lv: ns for lv, ns in named.items() if lv < level}
        if own:
            named[level] = own
        parts.append(_Part(start, end, level, title, named[max(named)] if named else ()))
    return parts


def untraced_readme(path, results_dir) -> list[Untraced]:
    """The README's numbers, outside rendered and exempt sections, that no source traces.

    Parameters
    ----------
    path : str or Path
        The README.
    results_dir : str or Path
        The ``results/`` folder.

    Returns
    -------
    list of Untraced
        In order of position (see the module docstring for each section's sources).

    Raises
    ------
    SectionError
        The README's markers are malformed or name no renderer (:func:`sections`).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    files, notebooks = readme_pools(results_dir)
    parts = _parts(text)
    skip = [range(s.start, s.end) for s in sections(text)]
    skip += [range(p.start, p.end) for p in parts
             if p.level and any(re.fullmatch(rx, p.title) for rx, _ in README_EXEMPT)]
    pools: dict[tuple[str, ...], Pool] = {(): files}

    def pool_of(number: Number) -> Pool:
        names = next(p for p in reversed(parts) if p.start <= number.start).notebooks
        names = tuple(n for n in names if n in notebooks)
        if names not in pools:
            pools[names] = Pool(", ".join(names))
            for name in names:
                pools[names].extend(notebooks[name])
        return pools[names]

    return untraced(text, pool_of, _shown(path), allowed=NOT_MEASURED + README_ALLOWED,
                    skip=skip)


# -- rendered README sections ---------------------------------------------------------


class SectionError(ValueError):
    """The README's section markers are malformed; the message names the line."""


_MARKER = re.compile(r"^<!-- topofl:(?P<kind>begin|end) (?P<name>[\w.-]+) -->[ \t]*$",
                     re.MULTILINE)
_ANY_MARKER = re.compile(r"<!--\s*topofl:")


@dataclass(frozen=True)
class Section:
    """A rendered section of a Markdown text.

    Attributes
    ----------
    name : str
        Its renderer's name.
    start, end : int
        The span of its body (from the line after the begin marker to the end marker).
    line : int
        The line of its begin marker (1-based).
    """

    name: str
    start: int
    end: int
    line: int


def _marker_error(text: str, pos: int, what: str) -> SectionError:
    return SectionError(f"line {text.count(chr(10), 0, pos) + 1}: {what}")


def sections(text: str, known=None) -> list[Section]:
    """The marked sections of a text, checked.

    Parameters
    ----------
    text : str
        The README's text.
    known : collection of str, optional
        The section names that have a renderer
        (:data:`topofl_lib.readme_sections.SECTIONS`); ``None``: any name.

    Returns
    -------
    list of Section
        In order.

    Raises
    ------
    SectionError
        A marker is malformed, an end has no begin of its name, a begin no end, a
        section begins inside another, or a name is not ``known``;
        the message names the line. Markers quoted as code are not markers.
    TypeError
        ``text`` is not a string.
    """
    found, open_ = [], None
    scanned = _INLINE_CODE.sub(_blank, _FENCED.sub(_blank, _check_text(text, "text")))
    markers = {m.start(): m for m in _MARKER.finditer(scanned)}
    for loose in _ANY_MARKER.finditer(scanned):
        m = markers.get(loose.start())
        if m is None:
            raise _marker_error(text, loose.start(), "malformed section marker; write "
                                "'<!-- topofl:begin NAME -->' or '<!-- topofl:end NAME -->' "
                                "alone on its line")
        name = m["name"]
        if m["kind"] == "begin":
            if open_ is not None:
                raise _marker_error(text, m.start(), f"section {name!r} begins inside "
                                    f"section {open_['name']!r}, which has not ended")
            if known is not None and name not in known:
                raise _marker_error(text, m.start(), f"unknown section {name!r}; known: "
                                    f"{sorted(known)}")
            open_ = m
        elif open_ is None or open_["name"] != name:
            raise _marker_error(text, m.start(), f"end of section {name!r}, which has not "
                                "begun" + (f" (section {open_['name']!r} is open)"
                                           if open_ is not None else ""))
        else:
            line = text.count("\n", 0, open_.start()) + 1
            found.append(Section(name, open_.end() + 1, m.start(), line))
            open_ = None
    if open_ is not None:
        raise _marker_error(text, open_.start(), f"section {open_['name']!r} never ends; "
                            f"add '<!-- topofl:end {open_['name']} -->'")
    return found
