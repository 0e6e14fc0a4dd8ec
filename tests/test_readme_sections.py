"""The README's FedTopo sections, rendered from a published notebook and its claim rows."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest

from topofl_lib.prose import render
from topofl_lib.readme_sections import SECTIONS, notebook_markdown


def write_notebook(path: Path, cells) -> Path:
    """A notebook of ``("md", text)`` cells and ``("code", markdown output or None)``."""
    nb = nbformat.v4.new_notebook()
    for kind, text in cells:
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(text))
            continue
        code = nbformat.v4.new_code_cell("render(...)")
        if text is not None:
            code.outputs = [nbformat.v4.new_output(
                "execute_result", execution_count=1,
                data={"text/markdown": text, "text/plain": repr(text)})]
        nb.cells.append(code)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


SECTIONED = [("md", "# Title\n\nIntro."), ("code", "**Before.** 1.25"),
             ("md", "## How this compares with the paper\n\nFirst paragraph."),
             ("code", None), ("code", str(render("**Table 1.** {x:.2f}", x=0.123))),
             ("md", "### A subsection\n\nStays inside."), ("code", "**Cost.** 2.5 times"),
             ("md", "## Next section\n\nLeft out."), ("code", "**After.** 9.99")]


def test_notebook_markdown_joins_a_sections_prose_in_order(tmp_path):
    path = write_notebook(tmp_path / "n.ipynb", SECTIONED)
    assert notebook_markdown(path, "## How this compares with the paper") == (
        "First paragraph.\n\n**Table 1.** 0.12\n\n### A subsection\n\nStays inside.\n\n"
        "**Cost.** 2.5 times")
    whole = notebook_markdown(path, "# Title")  # deeper headings do not end a section
    assert whole.startswith("Intro.\n\n**Before.** 1.25\n\n## How this compares")
    assert whole.endswith("## Next section\n\nLeft out.\n\n**After.** 9.99")
    assert notebook_markdown(path, "## Next section") == "Left out.\n\n**After.** 9.99"


@pytest.mark.parametrize("heading, message", [
    ("How this compares", "heading must be a Markdown heading line"),
    (3, "heading must be a Markdown heading line"),
    ("## Missing", "has no heading '## Missing'")])
def test_notebook_markdown_refuses_a_bad_or_missing_heading(tmp_path, heading, message):
    path = write_notebook(tmp_path / "n.ipynb", SECTIONED)
    with pytest.raises(ValueError, match=message):
        notebook_markdown(path, heading)


def test_fedtopo_comparison_quotes_the_published_notebook(tmp_path):
    assert SECTIONS["fedtopo_comparison"](tmp_path) == ""  # not published: nothing
    write_notebook(tmp_path / "notebooks" / "fedtopo.ipynb", SECTIONED)
    assert SECTIONS["fedtopo_comparison"](tmp_path) == (
        "> First paragraph.\n>\n> **Table 1.** 0.12\n>\n> ### A subsection\n>\n"
        "> Stays inside.\n>\n> **Cost.** 2.5 times")


def claims_csv(results: Path, rows: dict[str, tuple[float, float, int]]) -> None:
    results.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"id": cid, "measured_mean": m, "measured_std": sd, "n_seeds": n,
                   "profile": "paper"} for cid, (m, sd, n) in rows.items()]
                 ).to_csv(results / "claims.csv", index=False)


def test_fedtopo_table1_lists_the_measured_methods_in_the_papers_order(tmp_path):
    """Methods in Table 1's order, a method without any value left out, a cell whose
    runs diverged says how many finished, the caption counts the seeds run."""
    rows = {f"fedtopo.t1.fmnist.{p}.{m}": (80.0 + i, 1.5, 5)
            for i, p in enumerate("NLKQ") for m in ("fedtopo", "fedavg", "feddc")}
    rows["fedtopo.t1.fmnist.Q.scaffold"] = (89.304, 0.0, 1)
    rows["fedtopo.t1.fmnist.N.moon"] = (float("nan"), float("nan"), 0)  # no value: left out
    claims_csv(tmp_path, rows)
    lines = SECTIONS["fedtopo_table1"](tmp_path).splitlines()
    assert lines[0] == ("Final global test accuracy (%), mean ± sd over 5 seeds (`paper` "
                        "profile); a cell with fewer seeds says why.")
    assert [line.split(" | ")[0] for line in lines[4:]] == [
        "| FedAvg", "| SCAFFOLD", "| FedDC", "| FedTopo"]
    assert lines[4] == ("| FedAvg | 60.01 | 80.00 ± 1.50 | 83.83 | 81.00 ± 1.50 | 75.97 | "
                        "82.00 ± 1.50 | 91.07 | 83.00 ± 1.50 |")
    assert lines[5].endswith("| 90.22 | 89.30 (1 of 5 seeds; the other 4 diverged) |")
    assert lines[5].startswith("| SCAFFOLD | 68.78 | — | 87.43 | — |")


def test_fedtopo_table1_shows_no_sd_from_one_seed(tmp_path):
    claims_csv(tmp_path, {"fedtopo.t1.fmnist.N.fedavg": (18.6, 0.0, 1),
                          "fedtopo.t1.fmnist.N.fedtopo": (15.4, 0.0, 1)})
    lines = SECTIONS["fedtopo_table1"](tmp_path).splitlines()
    assert lines[0].startswith("Final global test accuracy (%), mean ± sd over 1 seed (")
    assert lines[4] == "| FedAvg | 60.01 | 18.60 | 83.83 | — | 75.97 | — | 91.07 | — |"
    assert lines[5] == "| FedTopo | 74.96 | 15.40 | 91.30 | — | 89.88 | — | 94.46 | — |"


def test_the_fedtopo_notebook_has_the_section_the_readme_quotes():
    """Renaming the heading in the notebook would leave the README's quote without a
    source: the publisher would fail at the end of a long run. Caught here instead."""
    from topofl_lib.readme_sections import FEDTOPO_COMPARISON_HEADING

    source = Path(__file__).resolve().parents[1] / "notebooks" / "fedtopo.ipynb"
    text = notebook_markdown(source, FEDTOPO_COMPARISON_HEADING)
    assert "**What could not be run here:**" in text  # its last paragraph, a Markdown cell
