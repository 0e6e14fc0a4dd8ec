"""``python -m topofl_lib`` (and the ``topofl`` command): see :mod:`topofl_lib.reproduce`."""

import sys

from .reproduce import main

if __name__ == "__main__":  # importing it (pytest --doctest-modules) runs nothing
    sys.exit(main())
