"""``python -m agent``: see ``agent.cli``."""

import sys

from .cli import main

sys.exit(main())
