"""The three papers topofl reproduces: their references, as text and as BibTeX.

:data:`PAPERS` holds, for each paper (keys ``"ptopofl"``, ``"fedtopo"``, ``"gfc"``), its
title, authors, year, venue, arXiv identifier and address; :func:`reference` writes one
plain-text line, :func:`bibtex` a BibTeX entry. The README's "How to cite" section, each
notebook's first cell and ``CITATION.cff`` give the same references
(``tests/test_citation.py`` checks that they agree with :data:`PAPERS`).

Examples
--------
>>> from topofl_lib.citation import PAPERS, reference
>>> sorted(PAPERS)
['fedtopo', 'gfc', 'ptopofl']
>>> PAPERS["gfc"]["arxiv"]
'2512.00849'
>>> reference("fedtopo")  # doctest: +ELLIPSIS
'Ke Hu, Liyao Xiang, Peng Tang and Weidong Qiu. FedTopo: ... arXiv:2511.12628, 2025.'
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["PAPERS", "bibtex", "reference"]


def _paper(title: str, authors: tuple[tuple[str, str], ...], year: int, arxiv: str,
           venue: str | None = None, doi: str | None = None) -> MappingProxyType:
    """One read-only entry of :data:`PAPERS`; ``authors`` are (given names, family name)."""
    return MappingProxyType({
        "title": title, "authors": tuple(f"{given} {family}" for given, family in authors),
        "author_names": authors, "year": year, "venue": venue, "arxiv": arxiv, "doi": doi,
        "url": f"https://arxiv.org/abs/{arxiv}"})


#: Key -> the paper: ``title``; ``authors`` (full names) and ``author_names`` ((given
#: names, family name) pairs), in the paper's order; ``year``; ``venue`` (None for a
#: preprint); ``arxiv`` (the identifier); ``doi`` (or None); ``url`` (its arXiv page).
#: Titles and authors as the papers and their arXiv pages print them. FedTopo's text
#: carries AAAI's copyright line but no proceedings reference, so it is cited as its
#: arXiv preprint.
PAPERS: MappingProxyType = MappingProxyType({
    "ptopofl": _paper(
        "pTopoFL: Privacy-Preserving Personalised Federated Learning via Persistent Homology",
        (("Kelly L", "Vomo-Donfack"), ("Adryel", "Hoszu"), ("Grégory", "Ginot"),
         ("Ian", "Morilla")),
        2026, "2603.04323"),
    "fedtopo": _paper(
        "FedTopo: Topology-Informed Representation Alignment in Federated Learning under "
        "Non-I.I.D. Conditions",
        (("Ke", "Hu"), ("Liyao", "Xiang"), ("Peng", "Tang"), ("Weidong", "Qiu")),
        2025, "2511.12628"),
    "gfc": _paper(
        "Topological Federated Clustering via Gravitational Potential Fields under Local "
        "Differential Privacy",
        (("Yunbo", "Long"), ("Jiaquan", "Zhang"), ("Xi", "Chen"), ("Alexandra", "Brintrup")),
        2026, "2512.00849",
        venue="Proceedings of the AAAI Conference on Artificial Intelligence (AAAI-26)",
        doi="10.1609/aaai.v40i28.39582"),
})


def _entry(key) -> MappingProxyType:
    """The paper of ``key``; a ValueError naming the key and the known ones otherwise."""
    if not isinstance(key, str) or key not in PAPERS:
        raise ValueError(f"key must be one of {', '.join(sorted(PAPERS))}, got {key!r}")
    return PAPERS[key]


def reference(key: str) -> str:
    """The paper's reference as one plain-text line.

    Authors, title, then the arXiv identifier and year of a preprint, or the venue, year,
    arXiv identifier and DOI of a published paper.

    Parameters
    ----------
    key : {"ptopofl", "fedtopo", "gfc"}
        The paper.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``key`` is not one of :data:`PAPERS`.
    """
    paper = _entry(key)
    names = paper["authors"]
    authors = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    if paper["venue"] is None:  # a preprint
        return f"{authors}. {paper['title']}. arXiv:{paper['arxiv']}, {paper['year']}."
    doi = f", doi:{paper['doi']}" if paper["doi"] else ""
    return (f"{authors}. {paper['title']}. {paper['venue']}, {paper['year']}. "
            f"arXiv:{paper['arxiv']}{doi}.")


def bibtex(key: str) -> str:
    """The paper's BibTeX entry (its citation key is ``key``).

    Parameters
    ----------
    key : {"ptopofl", "fedtopo", "gfc"}
        The paper.

    Returns
    -------
    str
        The entry, ending with a newline.

    Raises
    ------
    ValueError
        ``key`` is not one of :data:`PAPERS`.

    Examples
    --------
    >>> print(bibtex("ptopofl"))  # doctest: +ELLIPSIS
    @misc{ptopofl,
      title = {{pTopoFL}: Privacy-Preserving Personalised ...},
      author = {Vomo-Donfack, Kelly L and Hoszu, Adryel and Ginot, Grégory and Morilla, Ian},
      year = {2026},
      eprint = {2603.04323},
      archiveprefix = {arXiv},
      url = {https://arxiv.org/abs/2603.04323},
    }
    """
    paper = _entry(key)
    short, colon, rest = paper["title"].partition(":")  # braced: BibTeX keeps its case
    title = f"{{{short}}}{colon}{rest}" if colon else paper["title"]
    fields = [("title", title),
              ("author", " and ".join(f"{family}, {given}"
                                      for given, family in paper["author_names"])),
              ("year", str(paper["year"]))]
    if paper["venue"] is not None:
        fields.append(("booktitle", paper["venue"]))
    if paper["doi"]:
        fields.append(("doi", paper["doi"]))
    fields += [("eprint", paper["arxiv"]), ("archiveprefix", "arXiv"), ("url", paper["url"])]
    body = "".join(f"  {name} = {{{value}}},\n" for name, value in fields)
    kind = "misc" if paper["venue"] is None else "inproceedings"
    return f"@{kind}{{{key},\n{body}}}\n"
