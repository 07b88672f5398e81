"""The package's layering in figures: the floors, the imports that run up, the import circles.

    uv run python bench/layers.py [--src OTHER/src]

The floors and the reading of the imports are `tests/test_layers.py`'s; the test fails on any
arrow running up or any circle, and this prints them all, to quote. With `--src`, another
source tree is read (say an earlier commit's, from `git archive COMMIT src | tar -x -C
/tmp/before`) against the same floors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_layers import ROOT, SOURCE, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, help="a src/ directory (default: this checkout's)")
    args = parser.parse_args()
    print(report(args.src / ROOT if args.src else SOURCE))


if __name__ == "__main__":
    main()
