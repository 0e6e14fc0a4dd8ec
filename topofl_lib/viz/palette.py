"""The colours of every figure, in one place.

**Methods.** Every federated and federated-clustering method has one style (colour and
marker symbol), the same in every figure: :data:`METHOD_COLOURS`, :data:`METHOD_SYMBOLS`.
A *variant* of a method (``"pTopoFL-MA"``, ``"SCAFFOLD (v1.0.0 rule)"``,
``"FedTopo w/o TAL"``, ``"FedTopo[linear]"``, ``"FedTopo@conv2"``...) is drawn in a
shade of its method's colour, always dashed: the known ones are listed in
:data:`METHOD_VARIANTS` (so each keeps its style in every figure), and any other label
that starts with a method's name followed by a non-alphanumeric character is a variant
of that method too. A label that is neither gets a colour of
:data:`UNKNOWN_SERIES` chosen from a CRC-32 of the label (the same on every run and
machine, unlike Python's ``hash``).

:func:`method_styles` gives the styles of the labels of one figure: no two share
colour and dash, and an unknown label never takes a colour that is in the figure
already (nor, where it can be avoided, one that looks like it, CIE76 distance < 20).
:func:`method_style` is the style of one label on its own.

**Other roles** (a privacy channel, an attack, a homology degree, clients, class labels)
have their own small palettes, from plotly's D3 category10 by name.
"""

from __future__ import annotations

import colorsys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ATTACK_COLOURS",
    "BLACK",
    "BLUE",
    "BROWN",
    "CHANNEL_COLOURS",
    "CLIENT_SERIES",
    "CLUSTER_SERIES",
    "CYAN",
    "DASHES",
    "GREEN",
    "GREY",
    "HOMOLOGY_COLOURS",
    "LABEL_SERIES",
    "LIGHT_GREY",
    "METHOD_COLOURS",
    "METHOD_SYMBOLS",
    "METHOD_VARIANTS",
    "OLIVE",
    "ORANGE",
    "PAPER_MARK",
    "PINK",
    "PURPLE",
    "RED",
    "Style",
    "UNKNOWN_SERIES",
    "base_method",
    "colour_distance",
    "method_style",
    "method_styles",
    "rgba",
]

BLUE, ORANGE, GREEN, RED, PURPLE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"
BROWN, PINK, GREY, OLIVE, CYAN = "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"
BLACK, LIGHT_GREY = "#000000", "#bbbbbb"

#: Every method's colour and marker symbol (one entry each; all colours differ). The
#: methods drawn together (pTopoFL's tables and sweeps; FedTopo's Table 1) are at least
#: 25 apart in CIE76 colour distance.
_METHODS: dict[str, tuple[str, str]] = {
    # pTopoFL's paper
    "pTopoFL": (GREEN, "diamond"), "FedAvg": (BLUE, "circle"),
    "FedProx": (ORANGE, "square"), "SCAFFOLD": (RED, "triangle-up"),
    "pFedMe": (PURPLE, "triangle-down"), "Local-only": (BROWN, "x"),
    # Byzantine-robust aggregators
    "Median": (GREY, "cross"), "TrimmedMean": (OLIVE, "pentagon"), "Krum": (CYAN, "hexagon"),
    # FedTopo and its Table 1's twelve other methods
    "FedTopo": ("#c51b8a", "star"),
    "FedAvgM": ("#08306b", "triangle-left"), "FedNova": ("#01665e", "triangle-right"),
    "FedDyn": ("#620bda", "hourglass"), "FedDC": ("#252525", "bowtie"),
    "MOON": ("#762a83", "star-square"), "FedFM": ("#1b7837", "star-diamond"),
    "FedPAC": ("#8c510a", "diamond-tall"), "FedCCFA": ("#74add1", "diamond-wide"),
    "FedDF": ("#737373", "hexagram"), "FedSA": ("#f4a582", "star-triangle-up"),
    "FedGen": ("#a6d854", "star-triangle-down"), "FedFTG": ("#808000", "octagon"),
    # federated clustering (GFC's paper)
    "GFC": ("#1a9850", "diamond"), "k-FED": ("#4575b4", "circle"),
    "MUFC": ("#f46d43", "square"), "NN-FC": ("#8073ac", "triangle-up"),
}
#: Method -> colour.
METHOD_COLOURS: dict[str, str] = {m: c for m, (c, _) in _METHODS.items()}
#: Method -> plotly marker symbol.
METHOD_SYMBOLS: dict[str, str] = {m: s for m, (_, s) in _METHODS.items()}
#: Known variants: label -> (method, variant number >= 1). The number picks the shade
#: and the dash (:data:`DASHES`), so a variant looks the same in every figure.
METHOD_VARIANTS: dict[str, tuple[str, int]] = {
    "pTopoFL-CC": ("pTopoFL", 1), "pTopoFL-MA": ("pTopoFL", 2),
    "SCAFFOLD (v1.0.0 rule)": ("SCAFFOLD", 2),
    "FedTopo w/o TAL": ("FedTopo", 1), "FedTopo (alpha_max=100)": ("FedTopo", 2),
    "FedTopo[warmup]": ("FedTopo", 3), "FedTopo[linear]": ("FedTopo", 4),
    "FedTopo[piecewise]": ("FedTopo", 5), "FedTopo[smooth]": ("FedTopo", 6),
    "FedTopo@conv1": ("FedTopo", 7), "FedTopo@conv2": ("FedTopo", 8),
    "FedPAC (personal models)": ("FedPAC", 1), "FedCCFA (personal models)": ("FedCCFA", 1),
}
#: Dash patterns: a method is solid, its variant ``k`` is ``DASHES[1 + (k - 1) % 5]``.
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Colours of labels that are no method (none is a method's colour).
UNKNOWN_SERIES = ("#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628",
                  "#f781bf", "#999999", "#c9b800", "#00bfc4")
_UNKNOWN_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down",
                    "pentagon", "hexagon", "star", "cross", "x")
#: (hue shift, lightness shift) of variant ``k`` (cycled; with the five dashes of
#: variants, the first 65 variants of a method are all distinct).
_SHADES = ((0.0, 0.0), (0.06, -0.14), (-0.06, 0.18), (0.09, 0.06), (-0.09, -0.07),
           (0.12, -0.16), (-0.12, 0.17), (0.16, 0.0), (-0.16, -0.03), (0.2, 0.1),
           (-0.2, -0.12), (0.24, 0.04), (-0.24, -0.09))
#: Free variant numbers an unlisted variant hashes into (after the listed ones).
_VARIANT_SPAN = 8
#: Below this CIE76 distance two colours look alike; an unknown label avoids them.
_ALIKE = 20.0

#: The papers' own values drawn beside ours (one legend entry, "paper").
PAPER_MARK = {"symbol": "diamond", "size": 11, "color": BLACK,
              "line": {"color": "white", "width": 1}}
#: What a client sends, as an attack surface (privacy notebook): FedAvg's colour for the
#: gradient, pTopoFL's for the descriptor.
CHANNEL_COLOURS = {"gradient": BLUE, "descriptor": GREEN}
#: Privacy attacks.
ATTACK_COLOURS = {"closed_form": RED, "optimisation": BLUE, "population_guess": GREY,
                  "descriptor_inversion": GREEN}
#: Persistence diagrams and barcodes: H0 and H1.
HOMOLOGY_COLOURS = {0: BLUE, 1: RED}
#: Class labels in turn (label-distribution heatmaps: class 0 black, then D3).
LABEL_SERIES = (BLACK, BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN)
#: Client clusters in turn (explorer).
CLUSTER_SERIES = (BLUE, ORANGE, GREEN, PURPLE, BROWN, PINK, GREY, OLIVE, CYAN, RED)
#: Clients in turn (client k: ``CLIENT_SERIES[k % 10]``, the same in every panel).
CLIENT_SERIES = CLUSTER_SERIES


@dataclass(frozen=True)
class Style:
    """How one label is drawn.

    Attributes
    ----------
    colour : str
        ``#rrggbb``.
    dash : str
        A plotly dash pattern (:data:`DASHES`).
    symbol : str
        A plotly marker symbol.
    """

    colour: str
    dash: str = "solid"
    symbol: str = "circle"

    def line(self, width: float = 2.0) -> dict:
        """The plotly ``line`` of this style.

        Parameters
        ----------
        width : float, default=2.0
            Line width in pixels.

        Returns
        -------
        dict
        """
        return {"color": self.colour, "dash": self.dash, "width": width}

    def marker(self, size: float = 7, **extra) -> dict:
        """The plotly ``marker`` of this style.

        Parameters
        ----------
        size : float, default=7
            Marker size.
        **extra
            More marker attributes (``opacity``...).

        Returns
        -------
        dict
        """
        return {"color": self.colour, "symbol": self.symbol, "size": size, **extra}


def _crc(label: str) -> int:
    return zlib.crc32(label.encode("utf-8"))


def rgba(colour: str, alpha: float) -> str:
    """``#rrggbb`` as a plotly ``rgba(...)`` string with opacity ``alpha``.

    Parameters
    ----------
    colour : str
        ``#rrggbb``.
    alpha : float
        Opacity in [0, 1].

    Returns
    -------
    str
    """
    r, g, b = _rgb(colour)
    return f"rgba({round(255 * r)},{round(255 * g)},{round(255 * b)},{alpha:g})"


def _rgb(colour: str) -> tuple[float, float, float]:
    h = colour.lstrip("#")
    if len(h) != 6:
        raise ValueError(f"colour must be '#rrggbb', got {colour!r}")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))


def _lab(colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB colour."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in _rgb(colour)]
    r, g, b = lin
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
           0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116
                  for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def colour_distance(a: str, b: str) -> float:
    """CIE76 distance between two ``#rrggbb`` colours (about 2.3: just noticeable).

    Parameters
    ----------
    a, b : str
        The colours.

    Returns
    -------
    float
    """
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b), strict=True)) ** 0.5


def _shade(colour: str, k: int) -> str:
    """Variant ``k``'s shade of ``colour`` (``k = 0``: the colour itself)."""
    if k == 0:
        return colour
    dh, dl = _SHADES[k % len(_SHADES)] if k % len(_SHADES) else (0.28, 0.12)
    h, lum, s = colorsys.rgb_to_hls(*_rgb(colour))
    r, g, b = colorsys.hls_to_rgb((h + dh) % 1.0, min(0.8, max(0.15, lum + dl)), s)
    return "#" + "".join(f"{round(255 * c):02x}" for c in (r, g, b))


def base_method(label: str) -> str | None:
    """The method a label draws: itself, the method of a variant, or None (unknown).

    Parameters
    ----------
    label : str
        A method label.

    Returns
    -------
    str or None
    """
    if label in _METHODS:
        return label
    if label in METHOD_VARIANTS:
        return METHOD_VARIANTS[label][0]
    bases = [m for m in _METHODS
             if label.startswith(m) and len(label) > len(m) and not label[len(m)].isalnum()]
    return max(bases, key=len) if bases else None


def _variant_style(base: str, k: int) -> Style:
    return Style(_shade(METHOD_COLOURS[base], k), DASHES[1 + (k - 1) % (len(DASHES) - 1)],
                 METHOD_SYMBOLS[base])


def _first_variant(base: str) -> int:
    """The first variant number free for unlisted variants of ``base``."""
    return 1 + max((k for m, k in METHOD_VARIANTS.values() if m == base), default=0)


def _unlisted_variant(label: str, base: str, taken: set) -> Style:
    first = _first_variant(base)
    start = _crc(label) % _VARIANT_SPAN
    for i in range(_VARIANT_SPAN * len(DASHES) * len(_SHADES)):
        style = _variant_style(base, first + (start + i) % _VARIANT_SPAN
                               + _VARIANT_SPAN * (i // _VARIANT_SPAN))
        if (style.colour, style.dash) not in taken:
            return style
    raise RuntimeError(f"no free style for {label!r}")  # pragma: no cover (65 variants)


def _unknown(label: str, taken: set) -> Style:
    """An unknown label's style: a hashed colour of UNKNOWN_SERIES not in (or like) taken."""
    n = len(UNKNOWN_SERIES)
    start = _crc(label) % n
    order = [UNKNOWN_SERIES[(start + i) % n] for i in range(n)]
    used = {c for c, _ in taken}
    free = [c for c in order if c not in used]
    alike = [c for c in free if all(colour_distance(c, u) >= _ALIKE for u in used)]
    symbol = _UNKNOWN_SYMBOLS[_crc(label) % len(_UNKNOWN_SYMBOLS)]
    if alike or free:
        return Style((alike or free)[0], "solid", symbol)
    for dash in DASHES[1:]:  # more than ten unknown labels: the same colours, dashed
        for c in order:
            if (c, dash) not in taken:
                return Style(c, dash, symbol)
    raise ValueError(f"more than {n * len(DASHES)} unknown labels in one figure")


def method_style(label: str, family: str | None = None) -> Style:
    """The style of one label drawn on its own (see :func:`method_styles`).

    Parameters
    ----------
    label : str
        A method label.
    family : str, optional
        A method of :data:`METHOD_COLOURS`: an unknown label is drawn as its variant.

    Returns
    -------
    Style
    """
    return method_styles([label], family=family)[label]


def method_styles(labels: Iterable, family: str | None = None) -> dict[str, Style]:
    """The styles of the labels of one figure: no two share colour and dash.

    A method and a listed variant (:data:`METHOD_VARIANTS`) always get the same style;
    an unlisted variant of a method a variant number hashed from its label (the next
    free one if another label of the figure has it); a label that is no method a colour
    of :data:`UNKNOWN_SERIES` hashed from it, skipping colours already in the figure
    and, where it can, colours that look like them. Labels are resolved in sorted
    order within each kind, so the result does not depend on the order of ``labels``.

    Parameters
    ----------
    labels : iterable of str
        The figure's labels (repeats are ignored; non-strings are turned into str).
    family : str, optional
        A method of :data:`METHOD_COLOURS`: labels that are no method are drawn as its
        unlisted variants (e.g. ``family="pTopoFL"`` for the ablation's ``"M=1"``).

    Returns
    -------
    dict
        ``{label: Style}``.
    """
    if family is not None and family not in _METHODS:
        raise ValueError(f"family must be one of {sorted(_METHODS)}, got {family!r}")
    names = sorted({str(x) for x in labels})
    out: dict[str, Style] = {}
    for label in names:
        if label in _METHODS:
            out[label] = Style(METHOD_COLOURS[label], "solid", METHOD_SYMBOLS[label])
        elif label in METHOD_VARIANTS:
            out[label] = _variant_style(*METHOD_VARIANTS[label])
    taken = {(s.colour, s.dash) for s in out.values()}
    for label in names:
        base = base_method(label) or family
        if label not in out and base is not None:
            out[label] = _unlisted_variant(label, base, taken)
            taken.add((out[label].colour, out[label].dash))
    for label in names:
        if label not in out:
            out[label] = _unknown(label, taken)
            taken.add((out[label].colour, out[label].dash))
    return out
