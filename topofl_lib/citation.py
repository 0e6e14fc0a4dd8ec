"""The three papers ``topofl`` reproduces: their full references, as text and as BibTeX.

``PAPERS`` maps a key (``"ptopofl"``, ``"fedtopo"``, ``"gfc"``) to the paper's record;
:func:`reference` writes it as one plain-text line and :func:`bibtex` as a BibTeX entry.
The documentation site's paper pages take their citations from here.

The titles and authors are those printed in the paper texts the notebooks were written
from; a field those texts do not give (an arXiv id, a year) is left out rather than
guessed.

Examples
--------
>>> from topofl_lib.citation import reference
>>> reference("fedtopo")[:33]
'Ke Hu, Liyao Xiang, Peng Tang and'
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["PAPERS", "bibtex", "reference"]

#: ``{key: record}``: ``title``, ``authors`` (a tuple), ``venue`` and ``year`` (``None``
#: where the paper text does not give one), ``bibtex_type``.
PAPERS = MappingProxyType({
    "ptopofl": MappingProxyType({
        "title": "pTopoFL: Privacy-Preserving Personalised Federated Learning via "
                 "Persistent Homology",
        "authors": ("Grégory Ginot", "Ian Morilla"),
        "venue": "arXiv preprint",
        "year": None,
        "bibtex_type": "misc",
    }),
    "fedtopo": MappingProxyType({
        "title": "FedTopo: Topology-Informed Representation Alignment in Federated "
                 "Learning under Non-I.I.D. Conditions",
        "authors": ("Ke Hu", "Liyao Xiang", "Peng Tang", "Weidong Qiu"),
        "venue": "Proceedings of the AAAI Conference on Artificial Intelligence",
        "year": 2026,
        "bibtex_type": "inproceedings",
    }),
    "gfc": MappingProxyType({
        "title": "Topological Federated Clustering via Gravitational Potential Fields "
                 "under Local Differential Privacy",
        "authors": ("Yunbo Long", "Jiaquan Zhang", "Xi Chen", "Alexandra Brintrup"),
        "venue": None,
        "year": None,
        "bibtex_type": "misc",
    }),
})


def _paper(key: str):
    if not isinstance(key, str) or key not in PAPERS:
        raise ValueError(f"key must be one of {sorted(PAPERS)}, got {key!r}")
    return PAPERS[key]


def _authors(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def reference(key: str) -> str:
    """The paper's full reference as one plain-text line.

    Parameters
    ----------
    key : {"ptopofl", "fedtopo", "gfc"}
        The paper.

    Returns
    -------
    str
        Authors, title, venue and year (those the paper text gives), ending with a period.

    Raises
    ------
    ValueError
        ``key`` is not one of the three papers; the message names it.
    """
    paper = _paper(key)
    tail = ", ".join(str(paper[f]) for f in ("venue", "year") if paper[f] is not None)
    return ". ".join(p for p in (_authors(paper["authors"]), paper["title"], tail) if p) + "."


def bibtex(key: str) -> str:
    """The paper's BibTeX entry, cite key ``key``.

    Parameters
    ----------
    key : {"ptopofl", "fedtopo", "gfc"}
        The paper.

    Returns
    -------
    str
        The entry, one field a line.

    Raises
    ------
    ValueError
        ``key`` is not one of the three papers; the message names it.
    """
    paper = _paper(key)
    venue_field = "booktitle" if paper["bibtex_type"] == "inproceedings" else "note"
    fields = [("title", "{" + paper["title"] + "}"), ("author", " and ".join(paper["authors"]))]
    if paper["venue"] is not None:
        fields.append((venue_field, paper["venue"]))
    if paper["year"] is not None:
        fields.append(("year", str(paper["year"])))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{paper['bibtex_type']}{{{key},\n{body}\n}}"
