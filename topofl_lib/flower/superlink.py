"""``python -m topofl_lib.flower.superlink <flower-superlink arguments>``: Flower's SuperLink.

The same as ``flower-superlink`` (Flower's entry point, arguments passed on unchanged;
nothing of Flower is patched), after importing what it serves with and moving those
objects out of the garbage collector's reach (``gc.freeze``): they never become garbage,
and a full collection would otherwise walk all of them while the SuperLink answers
hundreds of requests per round. :class:`~topofl_lib.flower.LocalFederation` starts its
SuperLink so, and so does the Flower guide's deployment across machines (plain
``flower-superlink`` works as well).
"""

from __future__ import annotations

import gc
import sys

__all__ = ["main"]


def main(argv=None) -> None:
    """Run Flower's SuperLink with ``argv`` (default: this process's arguments)."""
    import flwr.superlink.main  # noqa: F401  (the FastAPI app it builds)
    from flwr.superlink.cli import flower_superlink

    gc.freeze()
    sys.argv = ["flower-superlink", *(sys.argv[1:] if argv is None else argv)]
    flower_superlink()


if __name__ == "__main__":
    main()
