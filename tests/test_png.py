"""PNG export (topofl_lib.viz.png): one Chromium per process, a forked child its own.

Skipped, saying why, where Chromium (``/usr/bin/chromium``, Debian package ``chromium``;
``make test`` installs it) is missing.
"""

import os
import shutil
import time

import plotly.graph_objects as go
import pytest

from topofl_lib.viz import png

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None and not os.path.exists("/usr/bin/chromium"),
    reason="no Chromium: install the Debian package 'chromium' (make test does)")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figure(i: int) -> go.Figure:
    return go.Figure(go.Scatter(x=[0, 1, 2], y=[i, 2, 1]))


def test_figures_are_pngs_and_the_server_starts_after_the_first(tmp_path, recwarn):
    """The first export runs on its own (it is where a missing Chromium raises); kaleido's
    server serves every later one, and plotly's per-figure options warn nothing."""
    paths = [tmp_path / f"{i}.png" for i in range(3)]
    png.write_png(figure(0), paths[0])
    assert png.serving()
    for i, path in enumerate(paths[1:], start=1):
        png.write_png(figure(i), path, scale=1.0)
    for path in paths:
        assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert [str(w.message) for w in recwarn] == []


def test_a_forked_child_writes_with_its_own_chromium(tmp_path):
    """A child forked after the server started inherits the server's state, not its
    thread: it must not send a figure to it (that waits forever), but write its own."""
    png.write_png(figure(0), tmp_path / "parent.png")
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only with both PNGs written
        code = 1
        try:
            for i in range(2):
                png.write_png(figure(i), tmp_path / f"child{i}.png")
            code = 0 if png.serving() else 3
        finally:
            os._exit(code)
    deadline_s = 120
    for _ in range(deadline_s * 10):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail(f"the forked child did not finish in {deadline_s} s")
    assert os.waitstatus_to_exitcode(status) == 0
    for i in range(2):
        assert (tmp_path / f"child{i}.png").read_bytes()[:8] == PNG_SIGNATURE
    png.write_png(figure(2), tmp_path / "parent_again.png")  # the parent's server still serves
    assert (tmp_path / "parent_again.png").read_bytes()[:8] == PNG_SIGNATURE
