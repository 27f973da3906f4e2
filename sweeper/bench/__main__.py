"""``python -m sweeper.bench``."""

import sys

from sweeper.bench import main

if __name__ == "__main__":
    sys.exit(main())
