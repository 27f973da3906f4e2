"""``python -m sweeper.bench``."""

import sys

from sweeper.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
