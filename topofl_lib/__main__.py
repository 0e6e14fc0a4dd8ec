"""``python -m topofl_lib``: see :mod:`topofl_lib.reproduce`."""

import sys

from .reproduce import main

sys.exit(main())
