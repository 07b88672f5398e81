"""One configuration measured on some probes, through `wrap()` as users would call it.

At temperature 0 a request the endpoint already answered is answered alike, so a probe whose
request a configuration leaves as an earlier one sent it is not sent again: its answer is
reused. Only options that change nothing but the text of the conversation allow that
(`RENDER_ONLY`); `tool_result_role`, for one, changes only the probes that hold a tool's
result.

Each reply is cut at `PROBE_TOKENS`. An endpoint that fails (no connection, a timeout, a
5xx) stops the measure: `failure` says why, and the result counts only the probes answered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._calibrate.candidates import Candidate, Result
from hermes_tools._calibrate.probes import Probe
from hermes_tools._calibrate.progress import Progress
from hermes_tools._doctor import Answer, ask, is_right
from hermes_tools.format import FORMAT_OPTIONS, HermesFormat

RENDER_ONLY = ("tool_result_role", "system_prompt_in_user")
# A probe's right answer is a few calls or a sentence or two; a model that writes on (text
# without end, a call block after another under a grammar) is cut here rather than run to
# the end of its window, and judged on what it wrote.
PROBE_TOKENS = 384


@dataclass(frozen=True)
class Measured:
    answer: Answer
    right: bool
    seconds: float


@dataclass
class Measurer:
    base_url: str
    model: str
    api_key: str
    progress: Progress
    timeout: float = 600.0
    failure: str | None = None  # why the endpoint failed, once it has
    reused: int = 0
    reasoned: bool = False  # a reply showed reasoning: think_open is worth trying
    _answers: dict[str, Measured] = field(default_factory=dict)

    def measure(self, candidate: Candidate, probes: Sequence[Probe]) -> Result:
        from openai import OpenAI

        from hermes_tools.client.wrapper import wrap

        answered: list[Measured] = []
        with OpenAI(
            base_url=self.base_url,
            api_key=self.api_key or "none",
            timeout=self.timeout,
            max_retries=0,
        ) as raw:
            client = wrap(raw, **candidate.options)
            for probe in probes:
                what = f"{candidate.label}: {probe.name}"
                key = _request_key(candidate, probe)
                known = self._answers.get(key)
                if known is not None:
                    self.reused += 1
                    answered.append(known)
                    self.progress.step(what + " (reused)", None)
                    continue
                started = time.monotonic()
                answer = ask(client, self.model, probe.case, PROBE_TOKENS)
                seconds = time.monotonic() - started
                if answer.failure is not None:
                    self.failure = f"{what}: {answer.failure}"
                    break
                measured = Measured(answer, is_right(probe.case, answer), seconds)
                self._answers[key] = measured
                self.reasoned = self.reasoned or answer.reasoned
                answered.append(measured)
                self.progress.step(what, seconds)
        calls = [m for m, p in zip(answered, probes, strict=False) if p.case.expected is not None]
        return Result(
            right=sum(m.right for m in answered),
            calls_right=sum(m.right for m in calls),
            call_probes=sum(p.case.expected is not None for p in probes),
            probes=len(probes),
            measured=len(answered),
            tokens=sum(m.answer.tokens for m in answered),
            seconds=sum(m.seconds for m in answered),
        )

    def wrong(self, candidate: Candidate, probes: Sequence[Probe]) -> list[str]:
        """The probes `candidate` got wrong, among those it was measured on."""
        names = []
        for probe in probes:
            known = self._answers.get(_request_key(candidate, probe))
            if known is not None and not known.right:
                names.append(probe.name)
        return names


def _request_key(candidate: Candidate, probe: Probe) -> str:
    """Equal for two configurations that send this probe the same request and read the reply
    alike."""
    options = candidate.options
    text = HermesFormat(**{k: v for k, v in options.items() if k in FORMAT_OPTIONS})
    case = probe.case
    rendered: Any = text.render_messages(case.messages, case.tools, case.options.get("tool_choice"))
    rest = {k: v for k, v in options.items() if k not in RENDER_ONLY}
    return json.dumps([probe.name, rest, rendered], sort_keys=True, default=str)
