"""What ``save_figure`` writes: HTML always; a real PNG where Chromium is, unless
``$TOPOFL_FIGURES`` says HTML only (``make test`` does: the notebooks' PNG exports, a
Chromium start each, were a fifth of the suite's CPU; the export is checked here)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("plotly")

import plotly.graph_objects as go  # noqa: E402

from topofl_lib.outputs import ENV_FIGURES  # noqa: E402
from topofl_lib.viz import figures  # noqa: E402
from topofl_lib.viz.figures import figure_formats, save_figure  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _figure() -> go.Figure:
    return go.Figure(go.Scatter(x=[0, 1, 2], y=[1, 3, 2]))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_a_real_png_is_written_beside_the_html(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FIGURES, "html+png")
    monkeypatch.setattr(figures, "_PNG_FAILED", False)
    written = save_figure(_figure(), "curve", tmp_path)
    assert [p.name for p in written] == ["curve.html", "curve.png"]
    assert (tmp_path / "curve.png").read_bytes().startswith(PNG_MAGIC)
    assert (tmp_path / "plotly.min.js").is_file()


def test_html_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FIGURES, "html")
    monkeypatch.setattr(figures, "_PNG_FAILED", False)
    written = save_figure(_figure(), "curve", tmp_path)
    assert written == [tmp_path / "curve.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.html", "plotly.min.js"]


def test_the_default_is_html_and_png(monkeypatch):
    monkeypatch.delenv(ENV_FIGURES, raising=False)
    assert figure_formats() == "html+png"


def test_an_unknown_value_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FIGURES, "svg")
    with pytest.raises(ValueError, match=r"TOPOFL_FIGURES must be one of \['html\+png', "
                                         r"'html'\], got 'svg'"):
        save_figure(_figure(), "curve", tmp_path)
    assert list(tmp_path.iterdir()) == []
