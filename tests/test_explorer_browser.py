"""End-to-end: the explorer in JupyterLab, driven in Debian's Chromium by Playwright.

Starts JupyterLab headless on 127.0.0.1 (a random free port, a random token, its own
config/runtime folders), opens ``notebooks/explorer.ipynb`` in Chromium, runs all
cells from the Run menu, moves the ``M`` slider of the server panel with the keyboard
and asserts that the server's bar chart received new data. Screenshots go to
``$TOPOFL_OUTPUT_DIR/figures/`` (``build/test-output`` under ``make test``). Every
process the test starts is stopped, also when it fails.

Skipped, saying why, where Chromium (``/usr/bin/chromium``, Debian package
``chromium``; ``make test`` installs it) or the ``playwright`` package is missing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="no Chromium at /usr/bin/chromium: install the Debian package "
                              "'chromium' (make test does) to run the browser test"),
    pytest.mark.skipif(__import__("importlib").util.find_spec("playwright") is None,
                       reason="playwright is not installed: pip install -e .[test]"),
]

# The server's bar chart: find the plotly div whose first trace is the Eq. 6 weights.
SERVER_WEIGHTS_JS = """() => {
  const div = Array.from(document.querySelectorAll('.js-plotly-plot')).find(
      d => d.data && d.data[0] && String(d.data[0].name || '').startsWith('Eq. 6'));
  return div ? JSON.stringify(Array.from(div.data[0].y || [])) : null;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {proc.returncode}:\n"
                               + log.read_text()[-3000:])
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout} s")


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server rooted at the repository; stopped (process group) afterwards."""
    port, token = _free_port(), secrets.token_hex(16)
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # no "official Jupyter news?" toast over the screenshots
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings")}
    log_path = tmp_path / "jupyterlab.log"
    log = open(log_path, "w")  # closed in the finally block
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={REPO}", "--ServerApp.port_retries=0",
         "--ServerApp.allow_root=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_server(f"{base}/api/status?token={token}", proc, log_path)
        yield base, token
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _drive_explorer(page, base: str, token: str, shots: Path) -> tuple[list, list]:
    """Open the explorer, run it, move the M slider; the weights before and after."""
    page.goto(f"{base}/lab/tree/notebooks/explorer.ipynb?token={token}", timeout=90_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    # the kernel is ready when the status bar says Idle
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('Idle')", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function(f"() => ({SERVER_WEIGHTS_JS})() !== null", timeout=120_000)
    # the last cell drives the controls from code and restores them; let it finish
    page.wait_for_selector(".jp-OutputArea-output:has-text('back to healthcare')",
                           timeout=120_000)
    before_json = page.evaluate(SERVER_WEIGHTS_JS)
    # JupyterLab skips rendering off-screen cells (content-visibility) and the plot of an
    # off-screen output may not be drawn yet: bring the client panel's cell into view
    # first, then wait for its figure's title
    client_cell = page.locator(".jp-CodeCell").filter(has_text="app.client_panel()").first
    client_cell.scroll_into_view_if_needed(timeout=30_000)
    client_cell.locator(".jp-OutputArea-output").filter(has_text="persistence diagram") \
        .first.wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "explorer_client_panel.png"))
    slider = page.locator(".widget-slider").filter(
        has=page.locator(".widget-label", has_text=re.compile(r"^M$"))).first
    slider.scroll_into_view_if_needed()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(
        f"(before) => {{ const now = ({SERVER_WEIGHTS_JS})(); "
        f"return now !== null && now !== before; }}",
        arg=before_json, timeout=30_000)
    after = json.loads(page.evaluate(SERVER_WEIGHTS_JS))
    page.screenshot(path=str(shots / "explorer_server_panel.png"))
    return json.loads(before_json), after


def test_explorer_slider_updates_plot_in_browser(jupyterlab):
    from playwright.sync_api import sync_playwright

    base, token = jupyterlab
    shots = Path(os.environ.get("TOPOFL_OUTPUT_DIR", REPO / "build" / "test-output")) / "figures"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            try:
                before, after = _drive_explorer(page, base, token, shots)
            except Exception:
                page.screenshot(path=str(shots / "explorer_failure.png"))
                raise
        finally:
            browser.close()
    assert len(after) == len(before) == 8
    assert after != before  # moving M from 2 to 3 re-clusters and re-weights the clients
