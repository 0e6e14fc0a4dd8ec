"""Where a notebook writes, and writing files so that a reader never sees half of one.

Only ``python -m topofl_lib reproduce`` writes the repository's published ``results/``
and ``figures/`` (see :mod:`topofl_lib.reproduce`). Every other run writes elsewhere:
:func:`output_dirs` resolves a notebook's ``output_dir`` parameter, else the environment
variable ``TOPOFL_OUTPUT_DIR``, else ``<repository>/build/interactive/``, and refuses a
target that is or lies in the repository's published folders, by real path
(:func:`check_unpublished`, which :func:`topofl_lib.results.write_claims` also asks before
it writes).

:func:`atomic_path` and :func:`write_text_atomic` write to a temporary file in the
target's folder and rename it over the target (``os.replace``), so the target holds
either its old or its new content, never a torn mix, even if the process is killed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ENV_FIGURES", "ENV_OUTPUT", "atomic_path", "check_unpublished", "output_dirs",
           "repository_root", "write_text_atomic"]

#: Environment variable naming the output folder of notebook runs (``make test`` sets it).
ENV_OUTPUT = "TOPOFL_OUTPUT_DIR"
#: Environment variable saying which files a saved figure gets: ``"html+png"`` (default)
#: or ``"html"`` (:func:`topofl_lib.viz.figures.figure_formats`; ``make test`` sets it).
ENV_FIGURES = "TOPOFL_FIGURES"

#: The published folders, relative to the repository root.
PUBLISHED = ("figures", "results")


def _is_repository(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "topofl_lib").is_dir()


def repository_root() -> Path | None:
    """The topofl checkout the current folder lies in (a notebook runs in ``notebooks/``).

    The first of the current folder and its parents that holds ``pyproject.toml`` and
    ``topofl_lib/``; else the checkout this package is imported from (an editable
    install); else None.
    """
    cwd = Path.cwd().resolve()
    for path in (cwd, *cwd.parents):
        if _is_repository(path):
            return path
    package_root = Path(__file__).resolve().parents[1]
    return package_root if _is_repository(package_root) else None


def _published_dirs() -> set[Path]:
    roots = {r for r in (repository_root(), Path(__file__).resolve().parents[1])
             if r is not None and _is_repository(r)}
    return {(r / name).resolve() for r in roots for name in PUBLISHED}


def check_unpublished(path, what: str | None = None) -> Path:
    """Return ``path``, or raise if its real path is or lies in a published folder.

    Symbolic links are resolved first, so neither a link to ``results/`` nor a folder
    inside it passes.

    Parameters
    ----------
    path : str or Path
        Where a notebook run is about to write.
    what : str, optional
        Who writes there, for the message (default: ``path`` itself).

    Returns
    -------
    Path
        ``path``, unchanged.

    Raises
    ------
    ValueError
        ``path`` is the repository's ``figures/`` or ``results/`` or lies below one: only
        ``python -m topofl_lib reproduce`` publishes there, through a staging folder.
    """
    path = Path(path)
    real = path.expanduser().resolve()
    folder = next((p for p in sorted(_published_dirs()) if real == p or p in real.parents),
                  None)
    if folder is not None:
        raise ValueError(
            f"{what or repr(str(path))} would write into the published folder {folder} "
            f"({path}, real path {real}); only `python -m topofl_lib reproduce --profile "
            "cpu|paper` writes there. Choose another output_dir, or leave it None to write "
            "under build/interactive/.")
    return path


def output_dirs(output_dir=None) -> tuple[Path, Path]:
    """``(figures_dir, results_dir)`` of a notebook run: ``<output>/figures``, ``<output>/results``.

    ``<output>`` is ``output_dir`` (a notebook parameter) if given, else
    ``$TOPOFL_OUTPUT_DIR`` if set, else ``<repository>/build/interactive`` (or
    ``./build/interactive`` outside a checkout). Nothing is created here.

    Parameters
    ----------
    output_dir : str or Path, optional
        The output folder.

    Returns
    -------
    tuple of Path
        ``(figures_dir, results_dir)``.

    Raises
    ------
    TypeError
        ``output_dir`` is neither None nor a path.
    ValueError
        The output folder is a file or lies under one, or either folder, by its real path
        (symbolic links resolved), would be or lie in the repository's published
        ``figures/`` or ``results/`` (:func:`check_unpublished`).
    """
    source = "output_dir"
    if output_dir is None and os.environ.get(ENV_OUTPUT):
        output_dir, source = os.environ[ENV_OUTPUT], f"${ENV_OUTPUT}"
    if output_dir is None:
        root = repository_root() or Path.cwd()
        output_dir, source = root / "build" / "interactive", "the default"
    if not isinstance(output_dir, (str, os.PathLike)):
        raise TypeError(f"output_dir must be a path or None, got {output_dir!r}")
    out = Path(output_dir).expanduser().resolve()
    blocked = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise ValueError(f"{source} = {str(output_dir)!r} cannot be a folder: {blocked} is "
                         "a file")
    for path in (out / "figures", out / "results"):
        check_unpublished(path, f"{source} = {str(output_dir)!r}")
    return out / "figures", out / "results"


@contextmanager
def atomic_path(path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``.

    The temporary file keeps ``path``'s suffix (writers that infer the format from it
    still work) and is removed if the block raises. The rename is atomic on POSIX, so
    ``path`` never holds a partial file.

    Examples
    --------
    >>> with atomic_path("results/claims.csv") as tmp:  # doctest: +SKIP
    ...     table.to_csv(tmp, index=False)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_path`.

    Parameters
    ----------
    path : str or Path
        The target file.
    text : str
        Its new content.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
