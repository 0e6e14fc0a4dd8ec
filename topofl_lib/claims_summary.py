"""The summary of every notebook's claims: protocol, verdict, coverage and ``comparison.md``.

``results/claims.csv`` holds every claim row of ``results/claims/*.csv``
(:func:`topofl_lib.results.collect_claims`) and three columns the publisher adds
(:func:`summary_table`):

* ``protocol``, how the row's setting compares with the paper's (:data:`PROTOCOLS`):
  ``paper`` (the paper's data, split, federation, rounds or epochs, and at least the
  paper's number of seeds), ``reduced`` (the paper's data with less compute or fewer
  seeds), ``stand-in`` (other data or another federation) or ``not run`` (the note says
  why). It comes from the declarative table ``topofl_lib/protocols.csv`` (columns
  profile, id_pattern, protocol, differs): the first rule whose profiles (separated by
  ``|``) hold the row's profile and whose ``fnmatch`` pattern matches its claim id. A row
  that no rule matches stops the summary (:func:`assign_protocols`), so no row is
  published without a protocol. Rows beyond the papers (``topofl.*`` ids) carry the
  protocol of the setting they ran in;
* ``differs``, what differs from the paper (empty for a ``paper`` row);
* ``verdict`` (:func:`paper_verdict`), whether our measurement agrees with the paper's
  number.

``comparison.md`` shows them beside the paper's values, with the counts per paper and
protocol (:func:`protocol_counts`), per protocol and verdict (:func:`verdict_counts`),
and the coverage of every table and figure of the three papers (:func:`coverage_table`:
how many of its numbers have a measured row, and why the others have none, from
``topofl_lib/coverage.csv``).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fnmatch import fnmatchcase
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .environment import ENVIRONMENT_FILE
from .results import collect_claims, compare_with_paper, load_paper_claims

__all__ = [
    "BEYOND",
    "PAPERS",
    "PROTOCOLS",
    "SUMMARY_COLUMNS",
    "VERDICTS",
    "assign_protocols",
    "claim_verdicts",
    "comparison_document",
    "comparison_markdown",
    "coverage_table",
    "coverage_totals",
    "load_coverage_rules",
    "load_protocol_rules",
    "paper_coverage",
    "paper_verdict",
    "protocol_counts",
    "summary_table",
    "verdict_counts",
]

#: The protocols a row can follow, from like for like to nothing measured.
PROTOCOLS = ("paper", "reduced", "stand-in", "not run")
#: The verdicts of :func:`paper_verdict` and of rows without a measurement.
VERDICTS = ("agrees", "differs", "n/a", "not run")
#: The columns of ``results/claims.csv``.
SUMMARY_COLUMNS = ["id", "measured_mean", "measured_std", "n_seeds", "profile", "protocol",
                   "differs", "verdict", "note"]
#: The three papers, in the order the summary lists them.
PAPERS = ("pTopoFL", "FedTopo", "GFC")
#: How the summary names the rows beyond the papers (``paper`` is ``topofl``).
BEYOND = "beyond the papers"
#: An sd at most this fraction of ``max(1, |mean|)`` is the rounding noise of a value
#: that every seed computes alike (an arithmetic one): such a row has no spread.
SPREAD_TOLERANCE = 1e-9
PROTOCOL_RULES = "protocols.csv"
COVERAGE_RULES = "coverage.csv"
_PROTOCOL_COLUMNS = ["profile", "id_pattern", "protocol", "differs"]
_COVERAGE_COLUMNS = ["paper", "source", "id_pattern", "reason"]
#: The reason a paper row without a measurement shows when coverage.csv gives none.
NO_REASON = f"no reason recorded in topofl_lib/{COVERAGE_RULES}"


# --------------------------------------------------------------------------- the two tables
def _packaged_table(name: str) -> pd.DataFrame:
    with resources.files("topofl_lib").joinpath(name).open() as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def _check_columns(rules: pd.DataFrame, columns: list[str], what: str) -> pd.DataFrame:
    if not isinstance(rules, pd.DataFrame):
        raise TypeError(f"{what} must be a DataFrame, got {type(rules).__name__}")
    if list(rules.columns) != columns:
        raise ValueError(f"{what} must have the columns {columns}, got {list(rules.columns)}")
    return rules.fillna("").astype(str)


def _fault(what: str, index: int, message: str) -> ValueError:
    return ValueError(f"{what}, rule {index + 1} (line {index + 2}): {message}")


def _check_protocol_rules(rules: pd.DataFrame, what: str = "protocol rules") -> pd.DataFrame:
    """``rules`` as strings, once every rule is well formed; else a ``ValueError`` naming it."""
    rules = _check_columns(rules, _PROTOCOL_COLUMNS, what)
    for i, r in enumerate(rules.itertuples(index=False)):
        if r.protocol not in PROTOCOLS:
            raise _fault(what, i, f"protocol must be one of {list(PROTOCOLS)}, got "
                                  f"{r.protocol!r}")
        if not r.id_pattern.strip() or not all(p.strip() for p in r.profile.split("|")):
            raise _fault(what, i, f"empty profile or id_pattern: {r.profile!r}, "
                                  f"{r.id_pattern!r}")
        if (r.protocol == "paper") == bool(r.differs.strip()) and r.protocol != "not run":
            need = "must be empty" if r.protocol == "paper" else "must say what differs"
            raise _fault(what, i, f"differs {need} for protocol {r.protocol!r}, got "
                                  f"{r.differs!r}")
    return rules


def _check_coverage_rules(rules: pd.DataFrame, what: str = "coverage rules") -> pd.DataFrame:
    """``rules`` as strings, once every rule is well formed; else a ``ValueError`` naming it."""
    rules = _check_columns(rules, _COVERAGE_COLUMNS, what)
    for i, r in enumerate(rules.itertuples(index=False)):
        if r.paper not in PAPERS:
            raise _fault(what, i, f"paper must be one of {list(PAPERS)}, got {r.paper!r}")
        if not (r.source.strip() and r.id_pattern.strip() and r.reason.strip()):
            raise _fault(what, i, "source, id_pattern and reason must not be empty")
    return rules


def load_protocol_rules() -> pd.DataFrame:
    """The rules of ``topofl_lib/protocols.csv``, checked.

    Returns
    -------
    pandas.DataFrame
        Columns profile (profiles separated by ``|``), id_pattern (an ``fnmatch``
        pattern of claim ids), protocol (one of :data:`PROTOCOLS`) and differs (what
        differs from the paper; empty for ``paper``), in the file's order: the first rule
        that matches a row gives its protocol.
    """
    return _check_protocol_rules(_packaged_table(PROTOCOL_RULES),
                                 f"topofl_lib/{PROTOCOL_RULES}")


def load_coverage_rules() -> pd.DataFrame:
    """The rules of ``topofl_lib/coverage.csv``, checked.

    Returns
    -------
    pandas.DataFrame
        Columns paper (one of :data:`PAPERS`), source (the paper claims' ``source``, or
        ``*`` for any), id_pattern (an ``fnmatch`` pattern of claim ids) and reason (why
        such a paper number has no measured row), in the file's order: the first rule
        that matches a row gives its reason.
    """
    return _check_coverage_rules(_packaged_table(COVERAGE_RULES),
                                 f"topofl_lib/{COVERAGE_RULES}")


# --------------------------------------------------------------------------- protocol
def assign_protocols(rows: pd.DataFrame, rules: pd.DataFrame | None = None) -> pd.DataFrame:
    """``rows`` with the ``protocol`` and ``differs`` of the first rule that matches each.

    Parameters
    ----------
    rows : pandas.DataFrame
        Claim rows (columns ``id`` and ``profile`` at least).
    rules : pandas.DataFrame, optional
        Protocol rules (default :func:`load_protocol_rules`).

    Returns
    -------
    pandas.DataFrame
        A copy of ``rows`` with the columns ``protocol`` and ``differs``.

    Raises
    ------
    ValueError
        A rule is malformed, or a row matches no rule (the message names the first such
        claim id and its profile, and how many rows more).

    Examples
    --------
    >>> rows = pd.DataFrame({"id": ["ptopofl.t1.hc.auc.fedavg"], "profile": ["cpu"]})
    >>> assign_protocols(rows)[["protocol", "differs"]].iloc[0].tolist()
    ['paper', '']
    """
    rules = load_protocol_rules() if rules is None else _check_protocol_rules(rules)
    table = [({p.strip() for p in r.profile.split("|")}, r.id_pattern, r.protocol, r.differs)
             for r in rules.itertuples(index=False)]
    pairs = list(zip(rows["id"].astype(str), rows["profile"].astype(str), strict=True))
    found = [next(((protocol, differs) for profiles, pattern, protocol, differs in table
                   if profile in profiles and fnmatchcase(cid, pattern)), None)
             for cid, profile in pairs]
    missing = [pair for pair, rule in zip(pairs, found, strict=True) if rule is None]
    if missing:
        cid, profile = missing[0]
        more = f" (and {len(missing) - 1} more rows)" if len(missing) > 1 else ""
        raise ValueError(f"no rule of topofl_lib/{PROTOCOL_RULES} gives a protocol to claim id "
                         f"{cid!r} under profile {profile!r}{more}; add one")
    return rows.assign(protocol=[rule[0] for rule in found],
                       differs=[rule[1] for rule in found])


# --------------------------------------------------------------------------- verdict
def _printed(text) -> Decimal | None:
    """The paper's value as printed, a finite ``Decimal`` (None: none, or a formula)."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def paper_verdict(mean: float, std: float, n_seeds: int, printed: str) -> str:
    """Whether our measurement agrees with the paper's number, by the summary's rule.

    With spread (``n_seeds > 1`` and ``std`` above the rounding noise of an arithmetic
    value, :data:`SPREAD_TOLERANCE` of ``max(1, |mean|)``): ``"agrees"`` when the
    paper's value lies within ``mean +- 2 std``. Without spread (one seed, a
    deterministic run, an arithmetic value): ``"agrees"`` when ``mean`` rounded half up
    to the decimals the paper prints equals the paper's value. ``"n/a"`` when the paper
    prints no number (or a formula) or there is no measurement.

    Parameters
    ----------
    mean : float
        Our mean over seeds.
    std : float
        Our sample standard deviation over seeds (NaN: none).
    n_seeds : int
        The number of seeds.
    printed : str
        The paper's value as it prints it (``"4.5"``, ``"0.790"``; ``""`` for none).

    Returns
    -------
    str
        ``"agrees"``, ``"differs"`` or ``"n/a"``.

    Examples
    --------
    >>> paper_verdict(4.459432, 0.0, 10, "4.5"), paper_verdict(4.375, 0.0, 10, "4.5")
    ('agrees', 'differs')
    >>> paper_verdict(0.80, 0.02, 20, "0.841"), paper_verdict(0.80, 0.02, 20, "0.790")
    ('differs', 'agrees')
    """
    paper = _printed(printed)
    if paper is None or n_seeds < 1 or not np.isfinite(mean):
        return "n/a"
    spread = (n_seeds > 1 and np.isfinite(std)
              and std > SPREAD_TOLERANCE * max(1.0, abs(mean)))
    if spread:
        return "agrees" if abs(float(mean) - float(paper)) <= 2 * std else "differs"
    step = Decimal(1).scaleb(paper.as_tuple().exponent)
    ours = Decimal(repr(float(mean))).quantize(step, rounding=ROUND_HALF_UP)
    return "agrees" if ours == paper else "differs"


def claim_verdicts(summary: pd.DataFrame) -> pd.Series:
    """The verdict of every row: :func:`paper_verdict`, or ``"not run"`` for such a row.

    Parameters
    ----------
    summary : pandas.DataFrame
        Claim rows with a ``protocol`` column (:func:`assign_protocols`).

    Returns
    -------
    pandas.Series
        One of :data:`VERDICTS` per row, on ``summary``'s index.
    """
    printed = load_paper_claims()["value_text"].reindex(summary["id"]).fillna("").to_numpy()
    verdicts = [
        "not run" if protocol == "not run" else paper_verdict(mean, std, int(n), text)
        for protocol, mean, std, n, text in zip(
            summary["protocol"], summary["measured_mean"].astype(float),
            summary["measured_std"].astype(float), summary["n_seeds"], printed,
            strict=True)]
    return pd.Series(verdicts, index=summary.index, dtype=object)


def summary_table(claims: pd.DataFrame, rules: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of ``claims.csv``: the merged claim rows with protocol, differs and verdict.

    Parameters
    ----------
    claims : pandas.DataFrame
        :func:`topofl_lib.results.collect_claims`'s rows.
    rules : pandas.DataFrame, optional
        Protocol rules (default :func:`load_protocol_rules`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SUMMARY_COLUMNS`; the measured columns and the note unchanged.

    Raises
    ------
    ValueError
        A row matches no protocol rule (:func:`assign_protocols`).
    """
    summary = assign_protocols(claims, rules)
    return summary.assign(verdict=claim_verdicts(summary))[SUMMARY_COLUMNS]


# --------------------------------------------------------------------------- counts
def _paper_of(ids: pd.Series) -> pd.Series:
    """The paper of each claim id (:data:`BEYOND` for the ``topofl.*`` rows)."""
    papers = load_paper_claims()["paper"].reindex(ids.astype(str)).to_numpy()
    return pd.Series(papers, index=ids.index).where(lambda p: p.isin(PAPERS), BEYOND)


def protocol_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """How many rows of each paper follow each protocol.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.

    Returns
    -------
    pandas.DataFrame
        Index: :data:`PAPERS`, :data:`BEYOND` and ``"all"`` (named ``paper``); columns:
        :data:`PROTOCOLS` and ``"rows"`` (their sum); counts of rows.
    """
    return _counts(_paper_of(summary["id"]), summary["protocol"], [*PAPERS, BEYOND],
                   list(PROTOCOLS), "paper")


def verdict_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """How many rows with a paper value get each verdict, per protocol.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.

    Returns
    -------
    pandas.DataFrame
        Index: :data:`PROTOCOLS` and ``"all"`` (named ``protocol``); columns:
        :data:`VERDICTS` and ``"rows"``; counts of the rows whose claim has a numeric
        paper value.
    """
    with_value = compare_with_paper(summary)["paper_value"].notna().to_numpy()
    rows = summary[with_value]
    return _counts(rows["protocol"], rows["verdict"], list(PROTOCOLS), list(VERDICTS),
                   "protocol")


def _counts(index: pd.Series, columns: pd.Series, rows: list, cols: list,
            name: str) -> pd.DataFrame:
    """Counts of (index, column) pairs in a fixed layout, a ``rows`` column and an ``all``
    row of totals."""
    counts = pd.crosstab(index, columns).reindex(index=rows, columns=cols, fill_value=0)
    counts["rows"] = counts.sum(axis=1)
    counts.loc["all"] = counts.sum()
    counts.index.name, counts.columns.name = name, None
    return counts.astype(int)


# --------------------------------------------------------------------------- coverage
def _reason(rules: pd.DataFrame, cid: str, paper: str, source: str) -> str:
    for r in rules.itertuples(index=False):
        if (r.paper == paper and r.source in ("*", source)
                and fnmatchcase(cid, r.id_pattern)):
            return r.reason
    return NO_REASON


def paper_coverage(summary: pd.DataFrame, rules: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every number the three papers print: whether it has a measured row, else why not.

    A paper claim is measured when the summary holds its id with at least one seed and a
    finite mean. The reason for one that is not is its not-run row's note, else the first
    coverage rule that matches its paper, source and id (:data:`NO_REASON` when none does).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.
    rules : pandas.DataFrame, optional
        Coverage rules (default :func:`load_coverage_rules`).

    Returns
    -------
    pandas.DataFrame
        One row per paper claim, indexed by id, in the claims table's order: ``paper``,
        ``source``, ``measured`` (bool), ``protocol`` (the measured row's, else ``""``)
        and ``reason`` (``""`` for a measured one).
    """
    rules = load_coverage_rules() if rules is None else _check_coverage_rules(rules)
    claims = load_paper_claims()
    claims = claims[claims["paper"].isin(PAPERS)]
    done = summary[(summary["n_seeds"] > 0)
                   & np.isfinite(summary["measured_mean"].astype(float))
                   & (summary["protocol"] != "not run")].set_index("id")["protocol"]
    protocol = done.reindex(claims.index).fillna("")
    # a not-run row's own note is its reason; the rules explain the ids without a row
    notes = (summary[summary["protocol"] == "not run"].set_index("id")["note"]
             if "note" in summary else pd.Series(dtype=object))
    notes = notes[notes.fillna("").astype(str).str.strip() != ""]
    reasons = ["" if p else notes.get(cid) or _reason(rules, cid, paper, source)
               for cid, paper, source, p in zip(claims.index, claims["paper"],
                                                claims["source"], protocol, strict=True)]
    return pd.DataFrame({"paper": claims["paper"], "source": claims["source"],
                         "measured": protocol != "", "protocol": protocol,
                         "reason": reasons}, index=claims.index)


_MEASURED = {f"measured_{p.replace('-', '_')}": p for p in PROTOCOLS if p != "not run"}
#: The order of the kinds of source in the coverage table (then by number).
_SOURCE_KINDS = ("Table", "Figure", "Section", "Theorem", "Corollary", "Appendix", "Text")


def _source_key(source: str) -> tuple:
    """Tables, figures, sections, ... each by number: ``Table 2`` before ``Table 10``."""
    kind, _, rest = source.partition(" ")
    number = re.match(r"\d+(?:\.\d+)*", rest)
    return (_SOURCE_KINDS.index(kind) if kind in _SOURCE_KINDS else len(_SOURCE_KINDS),
            tuple(int(x) for x in number.group().split(".")) if number else (), source)


def coverage_table(summary: pd.DataFrame, rules: pd.DataFrame | None = None) -> pd.DataFrame:
    """For each table, figure or passage of the papers: its numbers, how many are measured.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.
    rules : pandas.DataFrame, optional
        Coverage rules (default :func:`load_coverage_rules`).

    Returns
    -------
    pandas.DataFrame
        One row per (paper, source) of the paper claims, papers in :data:`PAPERS` order,
        then tables, figures, sections, theorems, corollaries, appendices and passages of
        text, each by number: ``paper``, ``source``, ``numbers`` (the paper
        numbers it prints), ``measured`` (those with a measured row), ``measured_paper``,
        ``measured_reduced``, ``measured_stand_in`` (by the row's protocol),
        ``not_measured`` and ``why_not`` (one line ``"<count>: <reason>"`` per reason,
        most frequent first).
    """
    per_claim = paper_coverage(summary, rules)
    rows = []
    for paper in PAPERS:
        mine = per_claim[per_claim["paper"] == paper]
        for source in sorted(mine["source"].unique(), key=_source_key):
            g = mine[mine["source"] == source]
            missing = g.loc[~g["measured"], "reason"].value_counts(sort=True)
            rows.append({"paper": paper, "source": source, "numbers": len(g),
                         "measured": int(g["measured"].sum()),
                         **{k: int((g["protocol"] == p).sum()) for k, p in _MEASURED.items()},
                         "not_measured": int((~g["measured"]).sum()),
                         "why_not": "\n".join(f"{n}: {r}" for r, n in missing.items())})
    return pd.DataFrame(rows, columns=["paper", "source", "numbers", "measured", *_MEASURED,
                                       "not_measured", "why_not"])


def coverage_totals(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`coverage_table`'s counts summed per paper, and over all three.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`coverage_table`'s rows.

    Returns
    -------
    pandas.DataFrame
        Index: :data:`PAPERS` and ``"all"`` (named ``paper``); columns ``numbers``,
        ``measured``, ``measured_paper``, ``measured_reduced``, ``measured_stand_in`` and
        ``not_measured``.
    """
    counts = ["numbers", "measured", *_MEASURED, "not_measured"]
    totals = table.groupby("paper")[counts].sum().reindex(list(PAPERS), fill_value=0)
    totals.loc["all"] = totals.sum()
    totals.index.name = "paper"
    return totals.astype(int)


# --------------------------------------------------------------------------- Markdown
def _fmt(value: float, spec: str) -> str:
    return "—" if pd.isna(value) else format(value, spec)


def _cell(value) -> str:
    """A table cell: no line breaks or pipes that would break the Markdown table."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    return text.replace("|", "\\|").replace("\n", "<br>")


def _markdown_table(df: pd.DataFrame, index: str | None = None) -> str:
    """``df`` as a Markdown table (its index as the first column when ``index`` names it)."""
    df = df.reset_index().rename(columns={df.index.name or "index": index}) if index else df
    lines = ["| " + " | ".join(map(str, df.columns)) + " |",
             "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _paper_cell(r) -> str:
    """The paper's value as printed, with its spread where it prints one."""
    if not r["value_text"] or pd.isna(r["value_text"]):
        return "—"
    spread = "" if pd.isna(r["paper_std"]) else f" ± {r['paper_std']:g}"
    return f"{r['value_text']}{spread}"


def _ours_cell(r) -> str:
    """``"mean ± sd"``; the mean alone from one seed, which has no spread."""
    mean = _fmt(r["measured_mean"], ".4g")
    return f"{mean} ± {_fmt(r['measured_std'], '.2g')}" if r["n_seeds"] > 1 else mean


def comparison_markdown(summary: pd.DataFrame) -> str:
    """The rows of ``comparison.md``: paper value beside ours, verdict, protocol, note.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.

    Returns
    -------
    str
        A Markdown table, one line per row of ``summary``.
    """
    df = compare_with_paper(summary)
    lines = [
        "| claim id | setting | method | metric | paper | ours (mean ± sd) | seeds | "
        "ours − paper | verdict | profile | protocol | what differs from the paper | note |",
        "|" + "---|" * 13,
    ]
    for cid, r in df.iterrows():
        verdict = "**differs**" if r["verdict"] == "differs" else r["verdict"]
        lines.append(
            f"| `{cid}` | {_cell(r['setting'])} | {_cell(r['method'])} | {_cell(r['metric'])} | "
            f"{_cell(_paper_cell(r))} | {_ours_cell(r)} | "
            f"{int(r['n_seeds'])} | "
            f"{_fmt(r['difference'], '+.3g')} | {verdict} | {r['profile']} | "
            f"{r['protocol']} | {_cell(r['differs'])} | {_cell(r['note'])} |")
    return "\n".join(lines) + "\n"


_PROTOCOL_TEXT = """\
## Protocols

Each row's protocol says how the setting it was measured in compares with the paper's
(from `topofl_lib/protocols.csv`, by claim id and profile; the column "what differs from
the paper" says what differs):

- `paper`: the paper's data, split, federation and rounds or epochs, with at least the
  paper's number of seeds: like for like;
- `reduced`: the paper's data with less compute or fewer seeds;
- `stand-in`: other data or another federation;
- `not run`: the setting cannot run here (the note says why).

Rows beyond the papers (`topofl.*` ids, without a paper value) carry the protocol of the
setting they ran in: `topofl.t1.hc.*` rows ran on the paper's Table 1 protocol and are
`paper`, `topofl.t1.own.*` rows ran on our generators and are `stand-in`.

"""

_VERDICT_TEXT = """\
## Verdict

A row's verdict compares our mean with the paper's number, by one rule for every row:

- **with spread** (more than one seed, and a standard deviation above the rounding noise
  of an arithmetic value, 1e-9 of the mean): `agrees` when the paper's value lies within
  our mean ± 2 sd. The papers mostly report single runs, so this asks whether the
  paper's number is a plausible single run of our setting: a coarse check, not a test
  (GFC's Table 1 prints its own sd, shown beside its value, not used here);
- **without spread** (an arithmetic value, a single or deterministic run, every seed
  alike): `agrees` when our mean, rounded half up to the decimals the paper prints,
  equals the paper's printed value (4.459 printed by the paper as "4.5" agrees;
  4.375 does not);
- `n/a`: no paper value (rows beyond the papers) or no measurement; `not run`: not run.

A verdict on a `reduced` or `stand-in` row compares two different experiments: read it
with the protocol. Paired tests between methods are in the notebooks.

"""


def _header(summary_with_source: pd.DataFrame, results_dir: Path) -> str:
    merged = summary_with_source
    lines = [f"- `{profile}`: {len(g)} rows ({', '.join(sorted(g['source'].unique()))})"
             for profile, g in merged.groupby("profile", sort=True) if profile != "not run"]
    n_not_run = int((merged["profile"] == "not run").sum())
    if n_not_run:
        lines.append(f"- `not run`: {n_not_run} rows of settings that cannot run here, "
                     "without a value (the note says why)")
    environment = (f"The environment each notebook ran in (Python, package versions, CPU, "
                   f"torch threads, git commit): [`{ENVIRONMENT_FILE}`]({ENVIRONMENT_FILE})."
                   "\n\n" if (results_dir / ENVIRONMENT_FILE).exists() else "")
    return ("# Results versus the papers\n\nEach row carries the profile it was measured "
            "under (`python -m topofl_lib reproduce --profile NAME`; see the README) and the "
            "protocol it follows. Rows by profile, with the claim files (`results/claims/`) "
            "they come from:\n\n" + ("\n".join(lines) or "- none") + "\n\n" + environment)


def _coverage_text(summary: pd.DataFrame) -> str:
    table = coverage_table(summary)
    totals = coverage_totals(table)
    n, measured = int(totals.loc["all", "numbers"]), int(totals.loc["all", "measured"])
    return (
        "## Coverage\n\n"
        f"The three papers print {n} numbers (`topofl_lib/paper_claims.csv` lists each). "
        f"{measured} of them have a row here with a measured value. Per paper, and per "
        "table, figure or passage: how many of its numbers have a measured row (by the "
        "row's protocol), and why the others have none (from `topofl_lib/coverage.csv`). "
        "The rows below list the measured ones and the settings that cannot run; the "
        "others are counted here only.\n\n"
        + _markdown_table(totals.rename(columns=_COVERAGE_HEADINGS), index="paper") + "\n"
        + _markdown_table(table.rename(columns=_COVERAGE_HEADINGS)) + "\n")


_COVERAGE_HEADINGS = {"numbers": "numbers", "measured": "measured",
                      "measured_paper": "`paper`", "measured_reduced": "`reduced`",
                      "measured_stand_in": "`stand-in`", "not_measured": "not measured",
                      "why_not": "why not"}


def comparison_document(results_dir) -> tuple[pd.DataFrame, str]:
    """The rows of ``claims.csv`` and the text of ``comparison.md``, from the claim files.

    The header lists each profile present with its row count and the claim files (one
    per notebook) measured under it, the counts per paper and protocol, the verdict rule
    and the counts per protocol and verdict, and the coverage of the papers' numbers;
    then one line per row.

    Parameters
    ----------
    results_dir : str or Path
        A results folder (``claims/`` in it).

    Returns
    -------
    summary : pandas.DataFrame
        :func:`summary_table`'s rows.
    markdown : str
        The text of ``comparison.md``.

    Raises
    ------
    topofl_lib.results.ClaimFileError
        A claim file is damaged, or an id is in two files.
    ValueError
        A row matches no protocol rule.
    """
    results_dir = Path(results_dir)
    merged = collect_claims(results_dir, source=True)
    summary = summary_table(merged.drop(columns="source"))
    text = (_header(merged, results_dir)
            + _PROTOCOL_TEXT
            + _markdown_table(protocol_counts(summary).rename(
                columns={p: f"`{p}`" for p in PROTOCOLS}), index="rows of") + "\n"
            + _VERDICT_TEXT
            + "Rows with a paper value, by protocol and verdict:\n\n"
            + _markdown_table(verdict_counts(summary), index="protocol") + "\n"
            + _coverage_text(summary)
            + "## Rows\n\nOurs: mean ± sample standard deviation over seeds (the spread of "
              "single runs, not the error of the mean).\n\n"
            + comparison_markdown(summary))
    return summary, text
