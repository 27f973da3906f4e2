"""``python -m sweeper``."""

import sys

from sweeper.cli import main

if __name__ == "__main__":
    sys.exit(main())
