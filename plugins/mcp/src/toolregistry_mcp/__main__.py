"""``python -m toolregistry_mcp serve [--transport stdio|streamable-http] ...``."""

from __future__ import annotations

import sys

from ._serve import main

if __name__ == "__main__":
    sys.exit(main())
