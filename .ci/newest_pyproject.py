"""Turn a copy of pyproject.toml into the one CI resolves against the newest releases.

Run with the locked environment's Python (`uv run --no-sync python .ci/newest_pyproject.py
COPY`): every dependency is left free, except llama-cpp-python, which is pinned to the version
installed from uv.lock and whose metadata is written in, so that uv never has to read it from
the sdist. llama-cpp-python is built from source (about 10 minutes on 2 cores, again for each
release) and the package only starts its server in a child process and talks to it over HTTP,
so a newer build says little about our code; the lock's version is bumped on purpose (`uv lock
--upgrade-package llama-cpp-python`). Its metadata is given because reading it would make uv
download the sdist again (the registry sends no cache headers, so the cached copy is stale) and
then build that fresh copy anew, though the same version's wheel is in the cache.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import distribution
from pathlib import Path


def main(path: str) -> None:
    llama = distribution("llama-cpp-python")
    pyproject = Path(path)
    text = pyproject.read_text()
    if "\n[tool.uv]\n" not in text or "constraint-dependencies" in text:
        sys.exit(f"{path}: expected a [tool.uv] table without constraint-dependencies")
    pin = f'constraint-dependencies = ["llama-cpp-python=={llama.version}"]\n'
    text = text.replace("\n[tool.uv]\n", "\n[tool.uv]\n" + pin, 1)
    text += (
        "\n[[tool.uv.dependency-metadata]]\n"
        'name = "llama-cpp-python"\n'
        f"version = {json.dumps(llama.version)}\n"
        f"requires-python = {json.dumps(llama.metadata['Requires-Python'])}\n"
        f"requires-dist = {json.dumps(llama.requires or [])}\n"
        f"provides-extras = {json.dumps(llama.metadata.get_all('Provides-Extra') or [])}\n"
    )
    pyproject.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1])
