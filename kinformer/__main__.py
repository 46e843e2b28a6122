"""``python -m kinformer``: the ``kinformer`` command."""

import sys

from kinformer.cli import main

sys.exit(main())
