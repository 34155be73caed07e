"""`python3 -m cgtrace`: the package is imported first, so a script that
imports cgtrace itself shares the one active recorder."""

import sys

from cgtrace.cli import main

if __name__ == "__main__":
    sys.exit(main())
