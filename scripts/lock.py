"""Write ``constraints.txt``, the lock file ``make setup`` installs with.

``make lock`` (``.venv/bin/python scripts/lock.py``) pins every package of
``pip install -e ".[all]"`` to the version installed in the running environment, the one
the committed results are made with: uv (``uv pip compile``) resolves ``pyproject.toml``'s
``all`` extra, preferring the installed versions, and the script then checks that every
pin equals the installed version (it stops with the list of disagreements otherwise, and
writes nothing). ``make lock UPGRADE=1`` (``--upgrade``) instead moves every pin to the
newest version ``pyproject.toml`` allows; the next ``make setup`` (or ``make test``)
installs them, since the virtual environment's stamp depends on the lock file.

uv resolves for the running interpreter and platform (CPython 3.11 on Linux x86-64 for
the committed lock). It searches pip's configured ``find-links`` too, where this kind of
machine keeps the CPU build of torch (``torch-2.13.0+cpu``). Local version labels are
dropped from the pins: ``torch==2.13.0`` matches that CPU wheel where pip finds it (a
local label ranks above the public release) and the public release elsewhere, and the lock
never names a CUDA build (the CPU wheel brings no ``nvidia-*`` packages into it).

The file is written to a temporary file and renamed, so an interrupted run leaves the
old lock in place.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from topofl_lib._validation import OneLineArgumentParser

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)(?P<rest>.*)$")


def installed_versions() -> dict[str, str]:
    """Canonical distribution name -> version, for the running environment."""
    return {canonicalize_name(d.metadata["Name"]): d.version
            for d in importlib.metadata.distributions() if d.metadata["Name"]}


def pip_find_links() -> list[str]:
    """The ``find-links`` locations pip is configured with (files and environment)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                         capture_output=True, text=True, check=True).stdout
    links: list[str] = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            links += [v for v in shlex.split(value.strip("'\"")) if v not in links]
    return links


def compile_lock(output: Path, upgrade: bool) -> None:
    """Run ``uv pip compile`` for the ``all`` extra into ``output``."""
    cmd = [sys.executable, "-m", "uv", "pip", "compile", str(ROOT / "pyproject.toml"),
           "--extra", "all", "--python", sys.executable, "--quiet",
           "--custom-compile-command", "make lock", "-o", str(output)]
    for link in pip_find_links():
        cmd += ["--find-links", link]
    if upgrade:
        cmd.append("--upgrade")
    subprocess.run(cmd, check=True, cwd=ROOT)


def drop_local_labels(text: str) -> str:
    """``torch==2.13.0+cpu`` -> ``torch==2.13.0`` (see the module docstring)."""
    lines = []
    for line in text.splitlines():
        match = PIN.match(line)
        if match:
            line = f"{match['name']}=={Version(match['version']).public}{match['rest']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def pins(text: str) -> dict[str, str]:
    """Canonical name -> pinned version of a lock file's text."""
    return {canonicalize_name(m["name"]): m["version"]
            for m in map(PIN.match, text.splitlines()) if m}


def disagreements(locked: dict[str, str], installed: dict[str, str]) -> list[str]:
    """Pins whose package is missing or installed at another (public) version."""
    return [f"{name}: lock {version}, installed {installed.get(name, 'nothing')}"
            for name, version in sorted(locked.items())
            if name not in installed
            or Version(Version(installed[name]).public) != Version(version)]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineArgumentParser(prog="scripts/lock.py",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("--upgrade", action="store_true",
                        help="newest allowed versions instead of the installed ones")
    parser.add_argument("--output", type=Path, default=LOCK,
                        help=f"the lock file to write (default {LOCK})")
    args = parser.parse_args(argv)
    if not args.output.resolve().parent.is_dir():
        parser.error(f"--output {args.output}: its folder does not exist")
    installed = installed_versions()
    with tempfile.TemporaryDirectory(dir=args.output.parent) as tmp:
        work = Path(tmp) / "constraints.txt"
        if not args.upgrade:  # uv keeps the versions of an existing output file
            work.write_text("".join(f"{n}=={v}\n" for n, v in sorted(installed.items())))
        compile_lock(work, args.upgrade)
        lines = work.read_text().splitlines(keepends=True)
        n_header = next((i for i, line in enumerate(lines) if not line.startswith("#")),
                        len(lines))
        note = (f"# Resolved for Python {platform.python_version()} on {platform.system()} "
                f"{platform.machine()}; local version labels dropped (torch==2.13.0\n"
                "# installs the CPU wheel where pip's find-links hold it). make setup "
                "installs with\n#    pip install -c constraints.txt -e \".[all]\"\n")
        text = drop_local_labels("".join([*lines[:n_header], note, *lines[n_header:]]))
        if not args.upgrade:
            wrong = disagreements(pins(text), installed)
            if wrong:
                print("error: the resolution disagrees with the installed versions "
                      "(nothing written):\n  " + "\n  ".join(wrong), file=sys.stderr)
                return 1
        work.write_text(text)
        os.replace(work, args.output)
    print(f"wrote {args.output} ({len(pins(text))} pins"
          + ("); run make setup to install them" if args.upgrade else
             ", each the installed version)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
