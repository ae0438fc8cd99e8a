"""``python -m tensorsocket_bundle ARGS``: the ``tensorsocket`` command, where its script is not on PATH."""

import sys

from . import main

sys.exit(main())
