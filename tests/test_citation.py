"""The licence and the citations: LICENSE in the package metadata, CITATION.cff, the papers'
references in topofl_lib.citation, the README and every notebook."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

from topofl_lib.citation import PAPERS, bibtex, reference

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

#: Notebook -> the papers it reproduces (or builds on), cited in its first cell.
NOTEBOOK_PAPERS = {
    "scenario_a_healthcare": ("ptopofl",),
    "scenario_b_benchmark": ("ptopofl",),
    "privacy_analysis": ("ptopofl",),
    "robustness": ("ptopofl",),
    "continual_drift": ("ptopofl",),
    "ablation_theorems": ("ptopofl",),
    "ptopofl_deep": ("ptopofl",),
    "label_aware": ("ptopofl",),
    "own_data": ("ptopofl",),
    "gfc_clustering": ("gfc",),
    "fedtopo": ("fedtopo",),
    "explorer": ("ptopofl", "gfc"),
}

#: The papers' text files the notebooks once pointed at; they are not in the repository.
PAPER_FILES = ("ptopofl_full_draft.txt", "ptopofl_arxiv.txt", "ptopofl_summary.txt",
               "fedtopo.txt", "gfc.txt")


def test_papers_have_every_field():
    assert sorted(PAPERS) == ["fedtopo", "gfc", "ptopofl"]
    for key, paper in PAPERS.items():
        assert paper["title"] and paper["authors"] and paper["year"] >= 2025, key
        assert re.fullmatch(r"\d{4}\.\d{5}", paper["arxiv"]), key
        assert paper["url"] == f"https://arxiv.org/abs/{paper['arxiv']}"
        assert paper["authors"] == tuple(f"{g} {f}" for g, f in paper["author_names"])


def test_reference_is_one_line_with_authors_title_and_arxiv_id():
    for key, paper in PAPERS.items():
        text = reference(key)
        assert "\n" not in text
        assert paper["title"] in text and f"arXiv:{paper['arxiv']}" in text
        assert all(name in text for name in paper["authors"])
        assert str(paper["year"]) in text
    assert reference("gfc").endswith("doi:10.1609/aaai.v40i28.39582.")
    assert reference("ptopofl").startswith("Kelly L Vomo-Donfack, Adryel Hoszu, Grégory Ginot "
                                           "and Ian Morilla. pTopoFL: ")


def test_bibtex_entries():
    for key, paper in PAPERS.items():
        entry = bibtex(key)
        assert entry.startswith(("@misc{" + key + ",", "@inproceedings{" + key + ","))
        assert entry.count("{") == entry.count("}") and entry.endswith("}\n")
        assert f"eprint = {{{paper['arxiv']}}}" in entry
        assert " and ".join(f"{f}, {g}" for g, f in paper["author_names"]) in entry, key
    assert "booktitle = {Proceedings of the AAAI Conference" in bibtex("gfc")


@pytest.mark.parametrize("function", [reference, bibtex])
@pytest.mark.parametrize("key", ["pTopoFL", "fedavg", "", None, 3])
def test_unknown_key_is_named(function, key):
    with pytest.raises(ValueError, match=re.escape(f"got {key!r}")) as info:
        function(key)
    assert "fedtopo, gfc, ptopofl" in str(info.value)


def test_citation_cff_agrees_with_pyproject_and_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert str(cff["version"]) == PYPROJECT["project"]["version"]
    assert cff["license"] == PYPROJECT["project"]["license"] == "MIT"
    refs = {r["title"]: r for r in cff["references"]}
    assert len(refs) == len(cff["references"]) == len(PAPERS)
    for key, paper in PAPERS.items():
        ref = refs[paper["title"]]
        assert [(a["given-names"], a["family-names"]) for a in ref["authors"]] == \
            list(paper["author_names"]), key
        assert ref["year"] == paper["year"] and ref["url"] == paper["url"]
        assert {"type": "other", "value": f"arXiv:{paper['arxiv']}"} in ref["identifiers"]
        assert ref.get("doi") == paper["doi"]
        assert ref.get("collection-title", ref.get("journal")) == \
            (paper["venue"] or "arXiv preprint")


def test_licence_is_declared_and_in_the_wheel_metadata(tmp_path):
    """pyproject declares the file; setuptools puts it in the wheel's metadata."""
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the topofl developers\n")
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "topofl_lib", tmp_path / "topofl_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "out").mkdir()
    code = ("from setuptools import build_meta; "
            "print(build_meta.prepare_metadata_for_build_wheel('out'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    dist_info = tmp_path / "out" / done.stdout.strip().splitlines()[-1]
    metadata = (dist_info / "METADATA").read_text()
    assert "License-Expression: MIT\n" in metadata and "License-File: LICENSE\n" in metadata
    assert (dist_info / "licenses" / "LICENSE").read_text() == text


def test_the_sdist_carries_the_licence_the_citation_and_the_changelog(tmp_path):
    """MANIFEST.in adds CITATION.cff and CHANGELOG.md to what setuptools puts in the sdist."""
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CITATION.cff",
                 "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "topofl_lib", tmp_path / "topofl_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "from setuptools import build_meta; print(build_meta.build_sdist('out'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    sdist = tmp_path / "out" / done.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"LICENSE", "CITATION.cff", "CHANGELOG.md", "README.md"} <= names


def _texts() -> dict[str, str]:
    """Every notebook, the README and every file of topofl_lib, by path."""
    files = [*sorted((ROOT / "notebooks").glob("*.ipynb")), ROOT / "README.md",
             *sorted(p for p in (ROOT / "topofl_lib").rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)]
    return {str(p.relative_to(ROOT)): p.read_text(errors="replace") for p in files}


def test_no_file_points_at_the_papers_text_files():
    found = [(path, name) for path, text in _texts().items() for name in PAPER_FILES
             if name in text]
    assert not found, f"cite the paper (topofl_lib.citation.reference) instead: {found}"


def test_every_notebook_cites_its_papers_in_its_first_cell():
    assert sorted(NOTEBOOK_PAPERS) == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for name, keys in NOTEBOOK_PAPERS.items():
        first = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells[0]
        assert first.cell_type == "markdown", name
        for key in keys:
            assert reference(key) in first.source, (name, key)


def test_readme_cites_the_three_papers():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## How to cite\n", 1)[1].split("\n## ", 1)[0]
    for key in PAPERS:
        assert reference(key) in section and bibtex(key) in section + "\n", key
