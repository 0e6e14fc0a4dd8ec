"""One source for every measured number (issue 24, item 1).

Every decimal number in the README and the guides (``docs/guide/*.md``) outside their
rendered sections, and in the Markdown
cells of every executed notebook in ``results/notebooks/``, traces to the committed
results (:mod:`topofl_lib.traceability` states the rule); the README's rendered
sections equal a fresh rendering from the committed results; a planted wrong number
fails, naming the file and the line. The repository's files are only read: planting
happens in temporary copies.
"""

import json
import re
import shutil
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from topofl_lib import readme_sections as rs
from topofl_lib.publish import Target, publish, write_readme_sections
from topofl_lib.readme_sections import (
    SECTIONS,
    documents,
    notebook_tables,
    render_readme,
    stale_sections,
    write_readme,
)
from topofl_lib.results import claim_rows, write_claims
from topofl_lib.studies.deep_ptopofl import DEEP_STAND_INS
from topofl_lib.traceability import (
    NOT_MEASURED,
    README_ALLOWED,
    Pool,
    SectionError,
    numbers,
    readme_pools,
    sections,
    untraced,
    untraced_notebook,
    untraced_readme,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
README = REPO / "README.md"
EXECUTED = sorted((RESULTS / "notebooks").glob("*.ipynb"))
DOCUMENTS = documents(REPO)
FINDINGS = REPO / "docs" / "guide" / "findings.md"  # the results' prose, out of the README
RENDERED = {"coverage", "ptopofl_table1_auc", "ptopofl_table1_acc", "fedtopo_table1",
            "fedtopo_comparison", "ptopofl_deep_table2", "ptopofl_dp_cost"}


def report(found) -> str:
    return f"{len(found)} number(s) trace to no committed result:\n" + "\n".join(
        map(str, found))


# -- the committed README and notebooks ----------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_readme_numbers_trace_to_committed_results(path):
    """The README's numbers, and the guides' (docs/guide/*.md), by the same rule."""
    found = untraced_readme(path, RESULTS)
    assert not found, report(found)


def test_readme_sections_equal_a_fresh_rendering():
    """Every rendered section of the README and the guides equals a fresh rendering, and
    every renderer has a place in them."""
    names = set()
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        names |= {s.name for s in sections(text)}
        stale = stale_sections(text, RESULTS)
        assert not stale, f"{path.name}: sections differ from the committed results " \
            "(re-render with topofl_lib.readme_sections.write_readme): " + ", ".join(
                f"{s.name!r} (line {s.line})" for s in stale)
        assert render_readme(text, RESULTS) == text
    assert names == RENDERED


def test_the_readme_is_a_front_door():
    """At most 300 lines; what it no longer holds is in a guide it links."""
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= 300
    guides = [p for p in DOCUMENTS if p != README]
    assert guides and all(f"(docs/guide/{p.name})" in text for p in guides)


#: Published notebooks whose source has changed since, and why they wait.
AWAITING: dict[str, str] = {}


def _cells(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(c.cell_type, c.source) for c in nb.cells
            if "injected-parameters" not in c.metadata.get("tags", [])]


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=AWAITING[p.stem]))
    if p.stem in AWAITING else p for p in EXECUTED], ids=[p.stem for p in EXECUTED])
def test_published_notebook_is_its_source_executed(path):
    """A published notebook has its source's cells, no more and no fewer (papermill's
    injected parameters aside): a change to a notebook is re-published with it."""
    assert _cells(path) == _cells(REPO / "notebooks" / path.name), (
        f"results/notebooks/{path.name} is not notebooks/{path.name} executed: re-publish "
        f"it (python -m topofl_lib reproduce --only {path.stem})")


@pytest.mark.parametrize("path", EXECUTED, ids=[p.stem for p in EXECUTED])
def test_executed_notebook_prose_traces(path):
    found = untraced_notebook(path, RESULTS)
    assert not found, report(found)


def test_rendered_cells_agree_with_the_claim_rows():
    """Where a rendered table takes a cell from a notebook's printed table, the claim rows
    (where they exist) say the same at the printed precision."""
    claims = pd.read_csv(RESULTS / "claims.csv").set_index("id")
    deep = next(t for t in notebook_tables(RESULTS / "notebooks" / "ptopofl_deep.ipynb")
                if (("pTopoFL",), ("mean", "fashion_mnist-L0.1")) in t.cells)
    checked = 0
    for key, ((dataset, partition, param), _) in DEEP_STAND_INS.items():
        scenario = f"{dataset}-{partition}{param:g}"  # the printed table's column
        for method, mkey in (("FedAvg", "fedavg"), ("pTopoFL", "ptopofl")):
            row = claims.loc[f"ptopofl.t2.{key}.{mkey}"]
            for stat, col in (("mean", "measured_mean"), ("std", "measured_std")):
                assert deep.cells[((method,), (stat, scenario))] == f"{100 * row[col]:.2f}"
                checked += 1
    assert checked == 12


# -- planted numbers fail, naming file and line --------------------------------------


def planted(text: str, after: str, line: str) -> tuple[str, int]:
    """``text`` with ``line`` inserted after the line holding ``after``; its line number."""
    lines = text.splitlines(keepends=True)
    index = next(i for i, ln in enumerate(lines) if after in ln) + 1
    lines.insert(index, line + "\n")
    return "".join(lines), index + 1


def test_a_number_planted_in_the_readme_fails(tmp_path):
    """In the guide that holds the results' prose (moved there from the README), and in
    the README itself."""
    text, line = planted(FINDINGS.read_text(encoding="utf-8"), "Local-only falls just as much",
                         "  Planted: the AUC fell by 12.3456 here.")
    copy = tmp_path / "findings.md"
    copy.write_text(text, encoding="utf-8")
    found = untraced_readme(copy, RESULTS)
    assert [(u.path, u.line, u.number) for u in found] == [(str(copy), line, "12.3456")]
    assert f"findings.md line {line}: '12.3456'" in str(found[0])
    text, line = planted(README.read_text(encoding="utf-8"), "Every other table, figure and",
                         "Planted: it takes 12.3456 s.")
    copy = tmp_path / "README.md"
    copy.write_text(text, encoding="utf-8")
    assert [(u.line, u.number) for u in untraced_readme(copy, RESULTS)] == [(line, "12.3456")]


@pytest.mark.parametrize("guide, real, wrong", [
    ("notebook_guide", "0.782 ± 0.046", "0.872 ± 0.046"),
    ("findings", "(0.921 → 0.754)", "(0.912 → 0.754)"),
    ("findings", "+9.55 and +2.73 points", "+9.55 and +2.37 points")])
def test_a_changed_digit_in_readme_prose_fails(tmp_path, guide, real, wrong):
    text = (FINDINGS.parent / f"{guide}.md").read_text(encoding="utf-8")
    assert text.count(real) == 1
    copy = tmp_path / f"{guide}.md"
    copy.write_text(text.replace(real, wrong), encoding="utf-8")
    found = untraced_readme(copy, RESULTS)
    line = text[:text.index(real)].count("\n") + 1
    assert [(u.line, u.number) for u in found] == [(line, next(
        n.text for n in numbers(wrong) if n.text not in real))]


def test_a_changed_digit_in_a_rendered_table_fails(tmp_path):
    text = README.read_text(encoding="utf-8")
    cell = "| pTopoFL | 0.841 | 0.842 ± 0.041 |"
    assert text.count(cell) == 1
    changed = text.replace(cell, "| pTopoFL | 0.841 | 0.843 ± 0.041 |")
    stale = stale_sections(changed, RESULTS)
    assert [(s.name, s.line) for s in stale] == [
        ("ptopofl_table1_auc", text[:text.index("<!-- topofl:begin ptopofl_table1_auc")]
         .count("\n") + 1)]
    assert render_readme(changed, RESULTS) == text


def copy_results(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A results folder in ``tmp_path`` with notebook ``name``, the manifest, its claims."""
    results = tmp_path / "results"
    (results / "notebooks").mkdir(parents=True)
    (results / "claims").mkdir()
    shutil.copy(RESULTS / "manifest.json", results / "manifest.json")
    for rel in json.loads((RESULTS / "manifest.json").read_text())[name]["files"]:
        if rel.startswith("results/claims/"):
            shutil.copy(REPO / rel, tmp_path / rel)
    path = results / "notebooks" / f"{name}.ipynb"
    shutil.copy(RESULTS / "notebooks" / f"{name}.ipynb", path)
    return path, results


@pytest.mark.parametrize("name", ["ablation_theorems", "ptopofl_deep"])
def test_a_number_planted_in_an_executed_notebook_fails(tmp_path, name):
    path, results = copy_results(tmp_path, name)
    before = {(u.cell, u.line, u.number) for u in untraced_notebook(path, results)}
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = max(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown")
    source = "".join(nb["cells"][cell]["source"])
    nb["cells"][cell]["source"] = source + "\n\nPlanted: an accuracy of 12.3456."
    path.write_text(json.dumps(nb), encoding="utf-8")
    found = [u for u in untraced_notebook(path, results)
             if (u.cell, u.line, u.number) not in before]
    assert [(u.cell, u.line, u.number) for u in found] == [
        (cell, source.count("\n") + 3, "12.3456")]
    assert str(found[0]).startswith(f"{path} cell {cell} line {source.count(chr(10)) + 3}: ")


def synthetic_notebook(path: Path, prose: str, printed: str) -> Path:
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("print(result)")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"), code,
                nbformat.v4.new_markdown_cell(prose)]
    nbformat.write(nb, path)
    return path


def test_notebook_prose_traces_to_its_own_outputs_only(tmp_path):
    (tmp_path / "results" / "notebooks").mkdir(parents=True)
    path = synthetic_notebook(tmp_path / "results" / "notebooks" / "toy.ipynb",
                              "AUC 0.842 and 84.2% of it.\nThen 0.824.", "AUC 0.8421\n")
    found = untraced_notebook(path, tmp_path / "results")
    assert [(u.cell, u.line, u.number) for u in found] == [(2, 2, "0.824")]


# -- numbers() ------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("AUC 0.842 over 20 seeds", [(0.842, 3)]),
    ("−3.6 and -3.6 and +9.55", [(-3.6, 1), (-3.6, 1), (9.55, 2)]),
    ("a gain of 2.5% and 95% CI", [(2.5, 1)]),
    ("12,000.5 images, 4,300 steps, 60 000 images", [(12000.5, 1)]),
    ("CI 0.045-0.084 and x−0.5", [(0.045, 3), (0.084, 3), (0.5, 1)]),
    ("(−2.65 to +4.64)", [(-2.65, 2), (4.64, 2)]),
    ("holds to 6e-17; norm 3.8 × 10^12", [(6e-17, 17), (3.8e12, -11)]),
    ("torch 2.13.0, v1.0.0, fig2_hc, dir0.1_curves, L0.1", []),
    ("`lr = 0.01` then\n```python\nx = 0.5\n```\n![](figures/a0.5.png) <!-- 0.7 -->", []),
    ("see https://example.org/v0.4 and [link](docs/1.5.md)", []),
    ("2026-11-23, 18:48:56, 3 seeds, 2.9x faster", [(2.9, 1)]),
])
def test_numbers(text, expected):
    assert [(n.value, n.decimals) for n in numbers(text)] == expected


def test_numbers_report_text_position_line_and_percent():
    text = "first line\nthe rate is −2.5% here"
    (n,) = numbers(text)
    assert (n.text, n.line, n.percent, text[n.start:n.end]) == ("−2.5%", 2, True, "−2.5%")
    assert numbers("`0.5`", markdown=False)[0].value == 0.5


def test_bad_inputs_are_refused_naming_the_parameter(tmp_path):
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        numbers(b"0.5")
    with pytest.raises(TypeError, match="pool must be a Pool or a function of a Number, "
                                        "got list"):
        untraced("0.5", [0.5])
    with pytest.raises(TypeError, match="readme_text must be a str, got NoneType"):
        render_readme(None, tmp_path)


# -- the rounding rule ----------------------------------------------------------------


def number(text: str):
    (n,) = numbers(text)
    return n


def test_a_prose_number_may_round_a_more_precise_source_never_the_reverse():
    precise = Pool().add([(0.097, 3)], "a")
    assert precise.trace(number("0.1")) == "a"
    assert precise.trace(number("0.10")) == "a"
    assert precise.trace(number("0.11")) is None
    coarse = Pool().add([(0.1, 1)], "b")
    assert coarse.trace(number("0.097")) is None
    assert coarse.trace(number("0.10")) is None
    assert coarse.trace(number("0.1")) == "b"


def test_a_tie_rounds_either_way():
    pool = Pool().add([(0.125, 3)], "a")
    assert pool.trace(number("0.12")) == pool.trace(number("0.13")) == "a"
    assert pool.trace(number("0.14")) is None


def test_signs_and_percentages():
    pool = Pool().add([(-0.0955, 4)], "a")
    assert pool.trace(number("−9.55"), percent=True) == "a"
    assert pool.trace(number("+9.55"), percent=True) == "a"  # the difference stated the other way
    assert pool.trace(number("9.6%")) == "a"
    assert pool.trace(number("9.55")) is None  # no percent context
    assert pool.trace(number("−0.0955")) == "a"
    assert pool.trace(number("0.0955")) == "a"
    assert Pool().add([(0.0955, 4)], "b").trace(number("−0.0955")) is None
    assert Pool().add([(0.5, 1)], "c").trace(number("50.0%")) is None  # 0.5 has 1 decimal


def test_the_percent_context_is_the_paragraph():
    pool = Pool().add([(0.0464, 4)], "a")
    assert untraced("A difference in points:\n+4.64 and more", pool) == []
    found = untraced("A difference:\n+4.64 and more\n\nin points", pool, "f.md")
    assert [(u.path, u.line, u.number) for u in found] == [("f.md", 2, "+4.64")]


def test_claim_files_are_read_at_six_significant_digits(tmp_path):
    (tmp_path / "claims.csv").write_text("id,measured_mean,measured_std,n_seeds,profile,note\n"
                                         "a,88.57,0.425088,3,paper,\nb,0,0,3,paper,\n")
    pool, notebooks = readme_pools(tmp_path)
    assert notebooks == {}
    claims = "results/claims.csv"
    assert pool.trace(number("88.570")) == claims  # %.6g dropped the zeros of 88.5700
    assert pool.trace(number("88.5700")) == claims
    assert pool.trace(number("88.57000")) is None
    assert pool.trace(number("0.42509")) == claims
    assert pool.trace(number("0.4250880")) is None
    assert pool.trace(number("0.000")) == claims


def test_not_measured_and_allowed_patterns():
    pool = Pool()
    assert untraced("pTopoFL (Sec. 4.6) and Secs. 3.5, 4.5", pool) == []
    # a paper's identifiers are not measurements; a number beside them still is
    assert [u.number for u in untraced("arXiv:2603.04323, arXiv:2511.12628v2, "
                                       "doi:10.1609/aaai.v40i28.39582 (0.841)", pool)] \
        == ["0.841"]
    assert [u.number for u in untraced("Python ≥ 3.11 and 1.5", pool,
                                       allowed=NOT_MEASURED + README_ALLOWED)] == ["1.5"]


def test_readme_sections_draw_on_the_notebooks_their_command_names(tmp_path):
    """A number of the fedtopo section does not trace to another notebook's outputs."""
    (tmp_path / "results" / "notebooks").mkdir(parents=True)
    synthetic_notebook(tmp_path / "results" / "notebooks" / "one.ipynb", "x", "0.8421")
    synthetic_notebook(tmp_path / "results" / "notebooks" / "two.ipynb", "x", "0.7001")
    readme = tmp_path / "README.md"
    readme.write_text("# T\n\n0.842\n\n## One\n\n`reproduce --only one`\n\n0.842 and 0.700\n\n"
                      "### Sub\n\n0.700\n\n## Two\n\n`reproduce --only two`\n\n0.700\n\n"
                      "## Speed\n\n9.99 s\n", encoding="utf-8")
    found = untraced_readme(readme, tmp_path / "results")
    assert [(u.line, u.number) for u in found] == [(3, "0.842"), (9, "0.700"), (13, "0.700")]


# -- markers and rendering ------------------------------------------------------------


@pytest.fixture
def toy_section(monkeypatch):
    monkeypatch.setitem(SECTIONS, "toy", lambda results_dir: f"| n |\n|---|\n| {1.5:.2f} |")
    return "toy"


def test_render_changes_only_the_text_between_markers(tmp_path, toy_section):
    text = ("# Title\n\nbefore 0.5\n\n<!-- topofl:begin toy -->\nstale\n<!-- topofl:end toy -->"
            "\n\nafter\n")
    new = render_readme(text, tmp_path)
    assert new == ("# Title\n\nbefore 0.5\n\n<!-- topofl:begin toy -->\n\n| n |\n|---|\n"
                   "| 1.50 |\n\n<!-- topofl:end toy -->\n\nafter\n")
    assert render_readme(new, tmp_path) == new
    assert [s.name for s in stale_sections(text, tmp_path)] == ["toy"]
    assert stale_sections(new, tmp_path) == []


def test_write_readme_rewrites_only_when_stale(tmp_path, toy_section):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- topofl:begin toy -->\n<!-- topofl:end toy -->\n")
    assert write_readme(readme, tmp_path) is True
    assert "| 1.50 |" in readme.read_text()
    assert write_readme(readme, tmp_path) is False
    assert write_readme(tmp_path / "missing.md", tmp_path) is False
    assert list(tmp_path.iterdir()) == [readme]  # no temporary file left


@pytest.mark.parametrize("text, message", [
    ("a\n<!-- topofl:begin toy -->\nb\n", "line 2: section 'toy' never ends"),
    ("a\nb\n<!-- topofl:end toy -->\n", "line 3: end of section 'toy', which has not begun"),
    ("<!-- topofl:begin nosuch -->\n<!-- topofl:end nosuch -->\n",
     "line 1: unknown section 'nosuch'"),
    ("<!-- topofl:begin toy -->\n<!-- topofl:begin coverage -->\n",
     "line 2: section 'coverage' begins inside section 'toy'"),
    ("<!-- topofl:begin toy -->\n<!-- topofl:end coverage -->\n",
     "line 2: end of section 'coverage', which has not begun (section 'toy' is open)"),
    ("x\n\n<!-- topofl:begin toy --> trailing\n", "line 3: malformed section marker"),
    ("x <!-- topofl:begin toy -->\n", "line 1: malformed section marker"),
    ("<!--topofl:begin toy-->\n", "line 1: malformed section marker"),
])
def test_marker_errors_name_the_line(tmp_path, toy_section, text, message):
    with pytest.raises(SectionError, match=re.escape(message)):
        render_readme(text, tmp_path)
    with pytest.raises(SectionError, match=re.escape(message)):
        sections(text, SECTIONS)


def test_markers_quoted_as_code_are_not_markers(tmp_path, toy_section):
    text = ("Write `<!-- topofl:begin NAME -->` around a table:\n\n```\n"
            "<!-- topofl:begin toy -->\n```\n")
    assert sections(text) == []
    assert render_readme(text, tmp_path) == text


def test_register_section_refuses_bad_and_taken_names():
    with pytest.raises(ValueError, match="name must be a word"):
        rs.register_section("two words")
    with pytest.raises(ValueError, match="name 'coverage' is already registered"):
        rs.register_section("coverage")


def test_the_dp_sentence_renders_the_published_dp_rows(tmp_path):
    """The README's end-to-end DP sentence: a pending note until the privacy notebook's
    topofl.dp.t1.hc rows at the README's target are published, then their values."""
    ids = {"topofl.dp.t1.hc.eps10.epsilon.ptopofl": (9.9956, 0.0),
           "topofl.dp.t1.hc.eps10.cost.ptopofl": (-0.1234, 0.0456),
           "topofl.dp.t1.hc.eps10.auc.ptopofl": (0.7188, 0.05)}
    rows = pd.DataFrame([{"id": cid, "measured_mean": m, "measured_std": sd, "n_seeds": 20,
                          "profile": "cpu"} for cid, (m, sd) in ids.items()])
    rows.to_csv(tmp_path / "claims.csv", index=False)
    assert "are rendered here from" in SECTIONS["ptopofl_dp_cost"](tmp_path)  # no clear row
    clear = {"id": "topofl.dp.t1.hc.nodp.auc.ptopofl", "measured_mean": 0.8422,
             "measured_std": 0.04, "n_seeds": 20, "profile": "cpu"}
    pd.concat([rows, pd.DataFrame([clear])]).to_csv(tmp_path / "claims.csv", index=False)
    text = SECTIONS["ptopofl_dp_cost"](tmp_path)
    assert "a target of ε = 10 per client" in text and "spends ε = 10.00 per client" in text
    # the spread labelled: the sd over seeds, and the 95% t-interval of the paired mean
    # difference, -0.1234 -+ t(0.975, 19) * 0.0456 / sqrt(20) = -0.1234 -+ 0.0213
    assert ("changes the final AUC by -0.123 (private minus non-private, paired over 20 "
            "seeds: standard deviation 0.046, 95% t-interval of the mean difference -0.145 "
            "to -0.102; 0.842 without DP, 0.719 with it; `cpu` profile)") in text
    assert "(neighbouring federations: one client added or removed)" in text
    assert "not against the server itself" in text  # the adversary, named


def test_coverage_section_counts_the_published_claims(tmp_path):
    """The README's coverage section: counts from the published claims.csv, empty for a
    claims.csv published before protocols existed."""
    from topofl_lib.claims_summary import coverage_table, coverage_totals

    old = pd.DataFrame({"id": ["ptopofl.t1.hc.auc.ptopofl"], "measured_mean": [0.84]})
    old.to_csv(tmp_path / "claims.csv", index=False)
    assert SECTIONS["coverage"](tmp_path) == ""
    rows = pd.DataFrame({"id": ["ptopofl.t1.hc.auc.ptopofl", "fedtopo.t1.fmnist.L.fedavg",
                                "topofl.t1.own.hc.auc.ptopofl"],
                         "measured_mean": [0.84, 78.6, 0.75], "measured_std": [0.04, 5.9, 0.09],
                         "n_seeds": [20, 3, 20], "protocol": ["paper", "reduced", "stand-in"]})
    rows.to_csv(tmp_path / "claims.csv", index=False)
    text = SECTIONS["coverage"](tmp_path)
    totals = coverage_totals(coverage_table(rows))
    assert f"print {totals.loc['all', 'numbers']} numbers; 2 of them" in text
    assert "1 of those under the paper's own protocol" in text
    assert "| beyond the papers | 0 | 0 | 1 | 0 | 1 |" in text
    assert "| pTopoFL | 1 | 0 | 0 | 0 | 1 |" in text


def test_notebook_tables_read_a_dataframe_by_labels(tmp_path):
    index = pd.MultiIndex.from_tuples([("L", "FedAvg"), ("L", "FedProx"), ("K", "FedAvg")],
                                      names=["partition", "method"])
    columns = pd.MultiIndex.from_product([["mean", "std"], ["a-0.1", "b-5"]])
    frame = pd.DataFrame(np.arange(12.0).reshape(3, 4) / 7, index=index,
                         columns=columns).round(2)
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("frame")
    code.outputs = [nbformat.v4.new_output("execute_result", execution_count=1, data={
        "text/html": frame._repr_html_(), "text/plain": repr(frame)})]
    nb.cells = [code]
    nbformat.write(nb, tmp_path / "t.ipynb")
    (table,) = notebook_tables(tmp_path / "t.ipynb")
    assert table.cell == 0
    assert table.columns() == [tuple(c) for c in columns]
    for (part, method), row in frame.iterrows():
        for col, value in row.items():
            assert table.cells[((part, method), col)] == f"{value:.2f}"


# -- the publisher -------------------------------------------------------------------


def stage(target: Target, name: str, ids, values) -> Path:
    folder = target.staging / "run" / name
    (folder / "figures").mkdir(parents=True, exist_ok=True)
    write_claims(claim_rows({cid: values for cid in ids}, "cpu"), folder / "results", name)
    nbformat.write(nbformat.v4.new_notebook(), folder / f"{name}.ipynb")
    return folder


def test_publishing_renders_the_readme_sections(tmp_path):
    target = Target(tmp_path, published=True)
    readme = tmp_path / "README.md"
    readme.write_text("Intro 0.5.\n\n<!-- topofl:begin ptopofl_table1_acc -->\n"
                      "<!-- topofl:end ptopofl_table1_acc -->\n\nEnd.\n")
    ids = [f"ptopofl.t1.hc.acc.{m}" for m in ("ptopofl", "fedavg")]
    publish(stage(target, "alpha", ids, [0.5, 0.6]), target, "alpha", "alpha", "cpu")
    text = readme.read_text()
    assert text.startswith("Intro 0.5.\n\n<!-- topofl:begin ptopofl_table1_acc -->\n\n| method |")
    assert "| pTopoFL | 0.786 | 0.550 ± 0.071 | 0.791 | — |" in text
    assert "| FedProx | 0.788 | — | 0.785 | — |" in text
    assert text.endswith("<!-- topofl:end ptopofl_table1_acc -->\n\nEnd.\n")
    assert write_readme_sections(target) is False  # already up to date


def test_the_quick_target_has_no_readme_to_render(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- topofl:begin ptopofl_table1_acc -->\n"
                      "<!-- topofl:end ptopofl_table1_acc -->\n")
    assert write_readme_sections(Target(tmp_path, published=False)) is False
    assert "method" not in readme.read_text()
