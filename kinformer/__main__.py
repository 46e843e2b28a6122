"""``python -m kinformer``: the ``kinformer`` command."""

import sys

from kinformer.cli.main import main

sys.exit(main())
