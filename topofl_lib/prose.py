"""Prose rendered from a run's own values, so no measured number is typed by hand.

A notebook states what its run measured with :func:`render`: a Markdown template whose
``{name:format}`` fields are filled from the values the run computed, shown as the
cell's output. Re-running the notebook (another machine, another profile) rewrites the
sentence with the new numbers; nothing can drift from the outputs above it::

    render("GFC took {gfc:.3f} s, k-FED {kfed:.3f} s.", gfc=t["GFC"], kfed=t["k-FED"])

Numbers typed in a notebook's Markdown cells are checked against its outputs instead
(``tests/test_traceability.py``).
"""

from __future__ import annotations

import math
import string
from numbers import Real

__all__ = ["Rendered", "counted", "render"]


class Rendered(str):
    """Markdown text that Jupyter displays as Markdown (and prints as itself)."""

    def _repr_markdown_(self) -> str:
        return str(self)


def render(template: str, **values) -> Rendered:
    """Fill ``template``'s ``{name:format}`` fields from ``values``.

    Parameters
    ----------
    template : str
        Markdown with :meth:`str.format` fields, each naming a keyword of ``values``.
    **values
        The run's values (numbers, strings). A NaN number renders as ``n/a``.

    Returns
    -------
    Rendered
        The Markdown, displayed as Markdown by Jupyter.

    Raises
    ------
    ValueError
        A field names no value, a value is not used, or a field is positional.

    Examples
    --------
    >>> render("{n} seeds, mean {m:.2f}", n=3, m=0.8456)
    '3 seeds, mean 0.85'
    """
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    bad = sorted(f for f in fields if not f.isidentifier())
    if bad:
        raise ValueError(f"template fields must be names, got {bad}")
    missing, unused = sorted(fields - set(values)), sorted(set(values) - fields)
    if missing or unused:
        raise ValueError(f"template fields without a value: {missing}; values the "
                         f"template does not use: {unused}")
    shown = {k: _Missing() if isinstance(v, Real) and not isinstance(v, bool)
             and math.isnan(v) else v for k, v in values.items()}
    return Rendered(template.format(**shown))


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1.

    Parameters
    ----------
    n : int
        The count.
    noun : str
        The noun in the singular.
    plural : str, optional
        Its plural; ``noun + "s"`` by default.

    Returns
    -------
    str

    Examples
    --------
    >>> counted(1, "seed"), counted(3, "seed"), counted(0, "process", "processes")
    ('1 seed', '3 seeds', '0 processes')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


class _Missing:
    """A NaN value: every format spec renders ``n/a``."""

    def __format__(self, spec: str) -> str:
        return "n/a"
