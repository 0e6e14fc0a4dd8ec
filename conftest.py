"""How the suite shares this machine's cores (``make test`` runs ``pytest -n WORKERS --dist
loadgroup``, pytest-xdist, with one worker per core and one more: the Makefile).

Every test may run on any worker, beside any other, except the groups made here: each
group runs on one worker, its tests in collection order.

* **A notebook's cells** (nbval): they run in order, in one kernel.
* **A Markdown file's code blocks** (pytest-markdown-docs): a README example may build
  on the one before it.
* **The Flower federations** (tests marked ``federation``, :data:`FEDERATIONS`): one
  after another, first.
* **Tests that share a costly module fixture** (:data:`SHARED_FIXTURES`): the fixture is
  built once, on one worker, rather than once per worker that happens to draw one of
  its tests. A parametrised fixture makes one group per parameter.

What a test takes from the machine is unique per worker already: ``tmp_path`` is under a
per-worker base folder, each federation, Dask cluster and browser picks free ports and
its own profile, and each notebook has its own folder in the run store.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from topofl_lib.environment import THREAD_VARIABLES

# One thread per BLAS/OpenMP library in every worker and notebook kernel (they inherit
# this process's environment; a value set by the caller is kept). The workers already
# take every core: OpenBLAS's own threads on top of them spin while they wait for a core,
# and with 2 cores busy a notebook cell of 5 s took 195 s (gfc_clustering's first
# experiment, measured beside two busy loops).
for _name in THREAD_VARIABLES:
    os.environ.setdefault(_name, "1")

#: Module fixtures whose tests are kept on one worker, with why.
SHARED_FIXTURES = {
    "crawl": "every page of the docs site opened once in Chromium (about a minute)",
    "browser": "one Chromium for the module's tests",
    "comparison": "the own-data comparison, computed once",
    "dask_client": "one local Dask cluster",
}


#: The group of the tests marked ``federation``: each starts a real Flower federation, a
#: SuperLink and its SuperNodes, whose rounds are short bursts of interpreter starts
#: between long waits (Flower's pulls and heartbeats). Two federations at once slow each
#: other's rounds several-fold on 2 cores (a 20-s run took 79 s beside another), so they
#: run one after another on one worker, while the others take the cores between bursts.
FEDERATIONS = "federations"


def _group(item: pytest.Item) -> str | None:
    path = Path(str(item.path))
    if item.get_closest_marker("federation") is not None:
        return FEDERATIONS
    if path.suffix in (".ipynb", ".md"):
        return f"file:{path.name}"
    for name in SHARED_FIXTURES:
        if name in getattr(item, "fixturenames", ()):
            callspec = getattr(item, "callspec", None)
            param = callspec.params.get(name, "") if callspec is not None else ""
            # no "]" after the "@" xdist puts before the group: it would take the
            # group for a parameter id and ignore it
            return f"fixture:{path.name}:{name}" + (f":{param}" if param != "" else "")
    return None


def _rank(item: pytest.Item) -> int:
    """The federations first, then the notebooks, then the rest: pytest-xdist hands out
    groups in collection order, and the longest should start first, not end the run."""
    group = item.get_closest_marker("xdist_group")
    name = group.args[0] if group is not None and group.args else ""
    return 0 if name == FEDERATIONS else 1 if name.endswith(".ipynb") else 2


def pytest_configure(config: pytest.Config) -> None:
    """Declare ``xdist_group`` also where pytest-xdist is absent (``--strict-markers``)."""
    config.addinivalue_line("markers", "xdist_group(name): run on one pytest-xdist worker")
    config.pluginmanager.register(_Schedule(), "topofl-schedule")


class _Schedule:
    """The two hooks: marks before pytest-xdist reads them, order after pytest's own
    reordering by fixture."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark the items that must share a worker with ``xdist_group``."""
        for item in items:
            group = _group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the longest groups first (see :func:`_rank`)."""
    items.sort(key=_rank)  # stable: each group keeps its order
