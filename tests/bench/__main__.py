"""``python -m tests.bench``."""

import sys

from tests.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
