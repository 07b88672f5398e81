"""Responses shared by every worker in a real Redis (or Valkey) server: `response_store`.

A fixture starts `redis-server` (or `valkey-server`) on 127.0.0.1, with a password and no
persistence; the proxies are the real app over real HTTP, the clients the stock `openai` SDK.
Two proxies with the same settings stand for two workers or replicas: a conversation continued
through `previous_response_id` on the one that did not answer its last turn must work, which it
cannot with the default in-memory store. Then the failures a user meets: a response the store
does not hold (400, saying why), a store that goes away (503, and new answers still given), a
store that does not answer at start (a warning), and `hermes-tools serve --workers 2` itself.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import redis
from openai import OpenAI

from endpoint_helpers import PARALLEL_CALLS
from hermes_tools.serve.command import check_response_store
from hermes_tools.serve.response_store import THIRTY_DAYS, RedisStore
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy, ServeProcess, error_of, free_port, proxy_for, wait_for
from test_serve_responses import function_results

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TOOLS: list[Any] = [WEATHER]
QUESTION = "What is the weather in Paris and Rome?"
ANSWER = "Paris is 21 C and Rome is 18 C."
KEYS = "hermes-tools:response:*"


class StoreServer:
    """A real Redis or Valkey server on 127.0.0.1: a password, no snapshots, no append-only
    file (nothing is written to disk), started and stopped by the test."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.password = secrets.token_hex(8)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)

    def start(self) -> StoreServer:
        # The same port on a restart: the proxies keep the URL they were given.
        self.process = subprocess.Popen(
            [
                self.binary,
                *("--bind", "127.0.0.1", "--port", str(self.port)),
                *("--requirepass", self.password),
                *("--save", "", "--appendonly", "no", "--dir", str(self.directory)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        with self.client() as client:
            while True:
                try:
                    if client.ping():
                        return self
                except redis.ConnectionError:
                    pass
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.binary} did not answer PING on port {self.port}")
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.process = None


@pytest.fixture
def store_server(tmp_path: Path) -> Iterator[StoreServer]:
    binary = shutil.which("redis-server") or shutil.which("valkey-server")
    if binary is None:
        pytest.skip(
            "neither redis-server nor valkey-server is on PATH: the shared response store is "
            "tested against a real server (Debian: apt-get install redis-server)"
        )
    store = StoreServer(binary, tmp_path).start()
    yield store
    store.stop()


@pytest.fixture
def workers(
    server: ScriptedServer, store_server: StoreServer
) -> Iterator[tuple[RunningProxy, RunningProxy]]:
    """Two workers (or replicas) with the same settings, sharing the store."""
    settings = proxy_for(server.base_url, response_store=store_server.url)
    started = [RunningProxy(settings).start(), RunningProxy(settings).start()]
    yield started[0], started[1]
    for proxy in started:
        proxy.stop()


def sdk(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="client-key", max_retries=0, timeout=30)


# -- one conversation, two workers ---------------------------------------------------------------


def test_workers_answer_alternate_turns_of_one_conversation(
    server: ScriptedServer, workers: tuple[RunningProxy, RunningProxy]
) -> None:
    one, two = workers
    server.script(PARALLEL_CALLS, Reply(ANSWER, chunks=3), "You're welcome.")
    with sdk(one) as first_client, sdk(two) as second_client:
        first = first_client.responses.create(model="qwen", input=QUESTION, tools=TOOLS)
        assert [item.type for item in first.output][-2:] == ["function_call", "function_call"]
        # The tool results go to the other worker, streamed.
        with second_client.responses.stream(
            model="qwen", input=function_results(first), tools=TOOLS, previous_response_id=first.id
        ) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            second = stream.get_final_response()
        assert second.output_text == ANSWER == "".join(deltas)
        assert len(deltas) > 1
        assert second.previous_response_id == first.id
        # And back to the first worker, whole, naming the streamed response.
        third = first_client.responses.create(
            model="qwen", input="Thanks!", tools=TOOLS, previous_response_id=second.id
        )
    assert third.output_text == "You're welcome."
    _, second_body, third_body = server.bodies()
    written_back = second_body["messages"][-1]["content"]
    assert "21 C" in written_back
    assert "18 C" in written_back
    assert QUESTION in json.dumps(second_body["messages"])
    # The third turn carries the whole conversation, whichever worker answered each turn.
    third_text = json.dumps(third_body["messages"])
    for earlier in (QUESTION, "I'll check both.", "21 C", "18 C", ANSWER):
        assert earlier in third_text, earlier
    assert third_body["messages"][-1] == {"role": "user", "content": "Thanks!"}


def test_a_response_is_retrieved_from_the_other_worker(
    server: ScriptedServer, workers: tuple[RunningProxy, RunningProxy]
) -> None:
    one, two = workers
    server.script(Reply(ANSWER, chunks=4))
    with sdk(one) as first_client, sdk(two) as second_client:
        stream = first_client.responses.create(model="qwen", input=QUESTION, stream=True)
        (made,) = [event.response for event in stream if event.type == "response.completed"]
        fetched = second_client.responses.retrieve(made.id)
    assert fetched.output_text == ANSWER
    assert fetched == made  # the object the stream ended with, as it was sent


def test_store_false_is_kept_nowhere_and_the_rest_expire_in_thirty_days(
    server: ScriptedServer,
    workers: tuple[RunningProxy, RunningProxy],
    store_server: StoreServer,
) -> None:
    one, two = workers
    server.script("Kept.", "Not kept.", "Continued.")
    with sdk(one) as first_client, sdk(two) as second_client:
        kept = first_client.responses.create(model="qwen", input="Remember this.")
        unkept = first_client.responses.create(model="qwen", input="Forget this.", store=False)
        continued = second_client.responses.create(
            model="qwen", input="Go on", previous_response_id=kept.id
        )
        assert continued.output_text == "Continued."
        # Not even the worker that answered it has it.
        for client in (first_client, second_client):
            with pytest.raises(openai.BadRequestError) as caught:
                client.responses.create(model="qwen", input="Go on", previous_response_id=unkept.id)
            assert error_of(caught.value.response)["code"] == "previous_response_not_found"
            with pytest.raises(openai.NotFoundError):
                client.responses.retrieve(unkept.id)
    with store_server.client() as client:
        keys = sorted(key.decode() for key in client.scan_iter(KEYS))
        assert keys == sorted(f"hermes-tools:response:{r.id}" for r in (kept, continued))
        for key in keys:
            assert THIRTY_DAYS - 60 < client.ttl(key) <= THIRTY_DAYS


def test_a_response_the_store_does_not_hold_is_a_400_saying_why(
    server: ScriptedServer, workers: tuple[RunningProxy, RunningProxy]
) -> None:
    with sdk(workers[1]) as client, pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="qwen", input="Go on", previous_response_id="resp_never_made")
    assert caught.value.status_code == 400
    error = error_of(caught.value.response)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "previous_response_id"
    assert error["code"] == "previous_response_not_found"
    assert "'resp_never_made' not found: the shared store does not hold it" in error["message"]
    assert "expire after 2,592,000 seconds" in error["message"]
    assert "whole conversation in `input`" in error["message"]
    assert not server.bodies()  # nothing went upstream


# -- when the store goes away --------------------------------------------------------------------


def test_a_store_that_goes_away_is_a_503_and_new_answers_are_still_given(
    server: ScriptedServer,
    workers: tuple[RunningProxy, RunningProxy],
    store_server: StoreServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    one, two = workers
    server.script("Before.", "Still answered.", "After.", "Continued after.")
    with sdk(one) as first_client, sdk(two) as second_client:
        before = first_client.responses.create(model="qwen", input="Hello")
        store_server.stop()
        # Naming a previous response: a clear 503 in OpenAI's shape, whole or streamed.
        with pytest.raises(openai.InternalServerError) as caught:
            second_client.responses.create(
                model="qwen", input="Go on", previous_response_id=before.id
            )
        with (
            pytest.raises(openai.InternalServerError) as streamed,
            second_client.responses.stream(
                model="qwen", input="Go on", previous_response_id=before.id
            ),
        ):
            pass
        with pytest.raises(openai.InternalServerError) as retrieved:
            second_client.responses.retrieve(before.id)
        # Nothing that needs the store is still answered; keeping it fails, in the log.
        still = first_client.responses.create(model="qwen", input="Anyone there?")
        assert still.output_text == "Still answered."
        assert wait_for(lambda: f"the response store failed to keep {still.id}" in caplog.text)
        # The store comes back (empty: it kept nothing on disk); the proxies reconnect.
        store_server.start()
        after = first_client.responses.create(model="qwen", input="Hello again")
        continued = second_client.responses.create(
            model="qwen", input="Go on", previous_response_id=after.id
        )
    assert continued.output_text == "Continued after."
    for failure in (caught.value, streamed.value):
        assert failure.status_code == 503
        error = error_of(failure.response)
        assert error["type"] == "server_error"
        assert error["param"] == "previous_response_id"
        assert error["code"] == "response_store_unavailable"
        assert "The response store cannot be reached" in error["message"]
        assert "whole conversation in `input`" in error["message"]
    assert retrieved.value.status_code == 503
    assert error_of(retrieved.value.response)["code"] == "response_store_unavailable"
    # The client is not told where the store is; the operator's log is.
    assert "127.0.0.1" not in json.dumps(error_of(caught.value.response))
    assert f"127.0.0.1:{store_server.port}" in caplog.text
    assert store_server.password not in caplog.text
    assert "status=503 error=response_store_unavailable" in caplog.text
    assert len(server.bodies()) == 4  # the refused requests never reached the upstream


def test_at_start_the_store_is_asked_for_a_ping(
    store_server: StoreServer, caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("test_store_check")
    shown = f"redis://127.0.0.1:{store_server.port}/0"
    with caplog.at_level(logging.INFO, logger="test_store_check"):
        assert check_response_store(RedisStore(store_server.url), 2, log)
        assert f"kept in {shown}" in caplog.text
        assert "WARNING" not in caplog.text
        caplog.clear()
        wrong = store_server.url.replace(store_server.password, "wrong-password")
        assert not check_response_store(RedisStore(wrong), 2, log)
        assert f"the response store {shown} failed" in caplog.text
        assert "start the Redis or Valkey server there" in caplog.text
        caplog.clear()
        store_server.stop()
        assert not check_response_store(RedisStore(store_server.url), 2, log)
        assert f"the response store {shown} failed" in caplog.text
        assert "a request naming a previous_response_id gets a 503" in caplog.text
    assert store_server.password not in caplog.text


# -- the command, with workers -------------------------------------------------------------------


def test_the_serve_command_shares_a_conversation_between_its_workers(
    server: ScriptedServer, store_server: StoreServer, tmp_path: Path
) -> None:
    """Which worker answers a turn is up to the kernel: the conversation goes on (a new
    connection each turn, as separate clients would) until both have answered some turns."""
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{server.base_url}"\nresponse_store = "{store_server.url}"\n')
    serve = ServeProcess("--config", str(config), "--workers", "2")
    answered_by: list[str] = []
    try:
        serve.wait_until_healthy(workers=2)
        previous: str | None = None
        expected: list[dict[str, Any]] = []
        for turn in range(40):
            if turn >= 4 and len(set(answered_by)) == 2:
                break
            server.script(Reply(f"Answer {turn}.", chunks=2))
            question = f"Question {turn}?"
            with OpenAI(base_url=serve.url + "/v1", api_key="k", max_retries=0) as client:
                if turn % 2:
                    with client.responses.stream(
                        model="qwen", input=question, previous_response_id=previous
                    ) as stream:
                        response = stream.get_final_response()
                else:
                    response = client.responses.create(
                        model="qwen", input=question, previous_response_id=previous
                    )
            assert response.output_text == f"Answer {turn}."
            expected.append({"role": "user", "content": question})
            sent = [(m["role"], m["content"]) for m in server.bodies()[-1]["messages"]]
            assert sent == [(m["role"], m["content"]) for m in expected], turn
            expected.append({"role": "assistant", "content": f"Answer {turn}."})
            previous = response.id
            assert wait_for(lambda turns=turn + 1: len(_workers_answering(serve)) == turns)
            answered_by = _workers_answering(serve)
    finally:
        output = serve.stop()
    assert len(set(answered_by)) == 2, f"one worker answered every turn:\n{output}"
    assert f"kept in redis://127.0.0.1:{store_server.port}/0" in output
    assert store_server.password not in output
    assert "WARNING" not in output


def _workers_answering(serve: ServeProcess) -> list[str]:
    """The worker (process id) of each request line for /v1/responses, in order."""
    return [
        line.split("[", 1)[1].split("]", 1)[0]
        for line in list(serve.output)
        if "hermes_tools.serve: POST /v1/responses" in line
    ]


def test_a_store_that_does_not_answer_at_start_is_a_warning(
    server: ScriptedServer, store_server: StoreServer, tmp_path: Path
) -> None:
    """A store that does not answer at start is a warning: the proxy starts and answers."""
    store_server.stop()
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{server.base_url}"\nresponse_store = "{store_server.url}"\n')
    server.script("Answered.")
    serve = ServeProcess("--config", str(config))
    try:
        serve.wait_until_healthy()
        answer = httpx.post(
            serve.url + "/v1/responses", json={"model": "qwen", "input": "Hi"}, timeout=30
        )
    finally:
        output = serve.stop()
    assert answer.status_code == 200, answer.text
    assert answer.json()["output"][0]["content"][0]["text"] == "Answered."
    assert "WARNING [" in output
    assert "start the Redis or Valkey server there" in output
    assert store_server.password not in output
