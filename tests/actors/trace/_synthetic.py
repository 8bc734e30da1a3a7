"""Trace data shaped as the contract says (briefs: the trace data contract, version 1), made up.

The page can be tested on its own with these: any size up to (and past) 20,000 records, every
actor role, engine state, message mode and mark type, and the edge cases a page must survive
(an empty thread, one actor, unicode, ``</script>`` and markup inside texts). A seeded
:class:`random.Random` makes each trace the same on every run.

The thread is simulated turn by turn as an engine would run it: an input arrives, the history
store appends it, the model is called with a context that grows and is folded into recaps,
tool calls go to the app host, analyzers notify, and the states follow from that tail.
"""

from __future__ import annotations

import random
from typing import Any

ROLES = ("engine", "history", "apps", "input", "recap", "analyzer", "model", "agent", "system", "other")
STATES = ("WaitingInput", "PendingInput", "WaitingToolResults", "ToolResultsReady", "PendingToolResults")
MODES = ("ask", "reply", "tell", "publish")
MARK_TYPES = ("fold", "notification", "edit", "denial", "pause", "failure")
LEVELS = ("live", "recent", "gist", "recap")

NASTY_TEXTS = (
    "</script><script>document.title='pwned'</script>",
    "<!--<script> and then </script> again",
    "<b>not bold</b> & <img src=x onerror=\"window.pwned=1\">",
    "unicode: héllo wörld — 東京 — مرحبا — 🙂🚀 — \u2028line sep",
    "{{DATA}} {{JS}} placeholders are just text",
)
"""Texts that would break a page that inlines data carelessly; each must show as written."""

_WORDS = ("plan", "search", "the", "file", "result", "notebook", "cell", "error", "retry", "summary", "token",
          "budget", "agent", "tool", "call", "reply", "fold", "recap", "edit", "note", "ok", "done", "why")


class _Thread:
    """The simulation's running state: the records, the clock and the history."""

    def __init__(self, rng: random.Random, budget: int, nasty: bool) -> None:
        self.rng = rng
        self.budget = budget
        self.nasty = nasty
        self.seq = 0
        self.t = 0.0
        self.messages: list[dict[str, Any]] = []
        self.marks: list[dict[str, Any]] = []
        self.states: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.texts: dict[str, str] = {}
        self.text_keys: dict[str, str] = {}
        self.entries = 0  # how many history entries there were
        self.unfolded: list[dict[str, Any]] = []  # the entries not folded into a recap: id, tokens, text
        self.recaps = 0

    def words(self, n: int) -> str:
        text = " ".join(self.rng.choice(_WORDS) for _ in range(n))
        if self.nasty and self.rng.random() < 0.08:
            text += " " + self.rng.choice(NASTY_TEXTS)
        return text

    def text_key(self, text: str) -> str:
        """The key of ``text`` in the shared texts table (the same text, the same key)."""
        if text not in self.text_keys:
            key = f"t{len(self.texts)}"
            self.texts[key] = text
            self.text_keys[text] = key
        return self.text_keys[text]

    def tick(self, lo: float = 0.0005, hi: float = 0.02) -> float:
        self.t = round(self.t + self.rng.uniform(lo, hi), 6)
        return self.t

    def send(self, sender: str, to: str, kind: str, mode: str, summary: str, *, reply: str | None = None,
             reply_kind: str = "") -> int:
        """One record (a message); an ask is followed by its reply at the same seq, a little later."""
        self.seq += 1
        i = len(self.messages)
        self.messages.append({"i": i, "seq": self.seq, "t": self.tick(), "from": sender, "to": to, "kind": kind,
                              "mode": mode, "summary": summary[:120], "reply_to": None})
        if mode == "ask":
            self.messages.append({"i": i + 1, "seq": self.seq, "t": self.tick(0.0002, 0.004), "from": to, "to": sender,
                                  "kind": reply_kind or kind + "Reply", "mode": "reply",
                                  "summary": (reply or "ok")[:120], "reply_to": i})
        return self.seq

    def mark(self, kind: str, author: str, summary: str) -> None:
        self.marks.append({"seq": self.seq, "t": self.t, "type": kind, "author": author, "summary": summary[:120]})

    def enter(self, state: str) -> None:
        if self.states and self.states[-1]["state"] == state:
            return
        if self.states:
            self.states[-1]["t1"] = self.t
            self.states[-1]["seq1"] = self.seq
        self.states.append({"state": state, "t0": self.t, "t1": self.t, "seq0": self.seq, "seq1": self.seq})

    def add_entry(self, text: str) -> None:
        self.unfolded.append({"id": f"e{self.entries}", "tokens": len(text) // 4 + self.rng.randint(20, 500),
                              "text": text})
        self.entries += 1

    def context(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """What the model gets: newest live, older recent then gist, folded ones as recaps;
        the oldest are omitted once the budget is spent."""
        chosen: list[dict[str, Any]] = []
        spent = 0
        omitted = 0
        levels = dict.fromkeys(LEVELS, 0)
        for age, entry in enumerate(reversed(self.unfolded)):
            level = "live" if age < 6 else "recent" if age < 20 else "gist"
            tokens = entry["tokens"] if level == "live" else max(2, entry["tokens"] // (2 if level == "recent" else 5))
            if spent + tokens > self.budget or len(chosen) >= 90:
                omitted += 1
                continue
            text = entry["text"] if level == "live" else f"[{level}] " + entry["text"][: 60 if level == "recent" else 24]
            chosen.append({"id": entry["id"], "level": level, "tokens": tokens, "text": self.text_key(text)})
            spent += tokens
            levels[level] += tokens
        chosen.reverse()  # oldest first
        omitted += max(0, self.recaps - 5)  # old recaps are left out, as the oldest entries are
        recaps = []
        for r in range(max(0, self.recaps - 5), self.recaps):
            tokens = 40 + 7 * r % 50
            recaps.append({"id": f"r{r}", "level": "recap", "tokens": tokens,
                           "text": self.text_key(f"recap r{r}: what was kept of the folded entries")})
            levels["recap"] += tokens
        return recaps + chosen, {**levels, "omitted": omitted}


def recorded_cost(calls: list[dict[str, Any]], tokens: int) -> dict[str, Any]:
    """What a call's output recorded of its cost: every seventh call as an older log has it
    (nothing: unknown), the others sent ``tokens`` whose prefix up to the previous call's
    size was shared (and cached)."""
    if len(calls) % 7 == 3:
        return {"usage": None, "sent_tokens": None, "shared_tokens": None}
    before = calls[-1]["tokens"] if calls else 0
    shared = before if before <= tokens else 0
    return {"usage": {"input_tokens": tokens, "cached_input_tokens": shared, "output_tokens": 20 + len(calls) % 5,
                      "counted": False},
            "sent_tokens": tokens, "shared_tokens": shared}


def synthetic_trace(records: int = 400, *, seed: int = 0, budget: int = 8000, agents: int = 1, nasty: bool = True,
                    needle: str | None = None) -> dict[str, Any]:
    """A made-up trace of about ``records`` records (the last turn may run a few over).

    Args:
        records: how many records (seqs) to simulate.
        seed: the random generator's seed.
        budget: the thread's token budget.
        agents: how many other agents of the system talk to this one.
        nasty: put :data:`NASTY_TEXTS` in some texts and summaries.
        needle: a word put in exactly one message's summary (for search tests).
    """
    rng = random.Random(seed)
    th = _Thread(rng, budget, nasty)
    engine, history, apps, inputs, recap = "engine/main", "history/main", "apps/main", "input/main", "recap/main"
    analyzer, model, system, clock = "analyzer/main/loops", "model/scripted", "system/team", "clock/main"
    others = [f"agent/helper-{n}" for n in range(agents)]
    actors = [
        {"id": engine, "role": "engine", "label": "engine"},
        {"id": history, "role": "history", "label": "history"},
        {"id": apps, "role": "apps", "label": "apps"},
        {"id": inputs, "role": "input", "label": "input"},
        {"id": recap, "role": "recap", "label": "recap"},
        {"id": analyzer, "role": "analyzer", "label": "loops"},
        {"id": model, "role": "model", "label": "model scripted"},
        *({"id": a, "role": "agent", "label": a.split("/")[1]} for a in others),
        {"id": system, "role": "system", "label": "team"},
        {"id": clock, "role": "other", "label": "clock"},
    ]
    th.enter("WaitingInput")
    turn = 0
    while th.seq < records:
        turn += 1
        text = th.words(rng.randint(3, 12))
        th.tick(0.05, 1.5)  # the user thinks
        th.send(inputs, engine, "UserInput", "tell", f"input: {text}")
        th.send(engine, history, "AppendInput", "ask", f"append input: {text}", reply_kind="Appended")
        th.add_entry(text)
        th.send(history, analyzer, "EntriesAppended", "publish", f"1 entry appended (e{th.entries - 1})")
        th.enter("PendingInput")
        for step in range(rng.randint(1, 4)):
            th.send(engine, model, "ModelRequest", "ask", f"step {step}: {th.entries} entries",
                    reply="model output", reply_kind="ModelOutput")
            th.tick(0.3, 2.5)  # the model thinks
            th.messages[-1]["t"] = th.t
            entries, levels = th.context()
            output = th.words(rng.randint(4, 30))
            tokens = sum(e["tokens"] for e in entries)
            th.calls.append({"n": len(th.calls), "seq": th.seq, "t": th.t, "model": "scripted",
                             "tokens": tokens, "budget": budget, "levels": levels,
                             "entries": entries, "output": th.text_key(output), **recorded_cost(th.calls, tokens)})
            th.send(engine, history, "AppendOutput", "ask", f"model output: {output}", reply_kind="Appended")
            th.add_entry(output)
            if rng.random() < 0.55:
                tools = rng.randint(1, 3)
                th.enter("WaitingToolResults")
                for n in range(tools):
                    tool = rng.choice(("search", "read_file", "notebook.run", "write"))
                    th.send(engine, apps, "CallTool", "ask", f"{tool}({th.words(2)})", reply=f"{tool}: {th.words(4)}",
                            reply_kind="ToolResult")
                    th.tick(0.01, 0.4)
                    if rng.random() < 0.05:
                        th.mark("failure", apps, f"{tool} raised TimeoutError after 30 s")
                th.enter("ToolResultsReady")
                th.send(engine, history, "AppendToolResults", "ask", f"{tools} tool results", reply_kind="Appended")
                th.add_entry(th.words(rng.randint(5, 20)))
                th.enter("PendingToolResults")
            else:
                break
        th.enter("WaitingInput")
        if len(th.unfolded) > 24:
            folded = th.unfolded[: rng.randint(6, 14)]
            del th.unfolded[: len(folded)]
            th.send(recap, history, "FoldIntoRecap", "ask", f"fold {folded[0]['id']}..{folded[-1]['id']}",
                    reply_kind="Folded")
            th.mark("fold", recap, f"folded {folded[0]['id']}..{folded[-1]['id']} into r{th.recaps} (kept: names, numbers)")
            th.recaps += 1
        if rng.random() < 0.3:
            th.send(analyzer, engine, "Notification", "tell", f"loop detector: {th.words(3)}")
            th.mark("notification", analyzer, f"possible loop: {th.words(3)}")
        if rng.random() < 0.15:
            th.send(apps, history, "EditEntry", "ask", f"edit e{rng.randrange(th.entries)}", reply_kind="Edited")
            if rng.random() < 0.4:
                th.mark("denial", history, "edit denied: the entry is folded into a recap")
            else:
                th.mark("edit", apps, f"edited e{rng.randrange(th.entries)}: {th.words(3)}")
        if others and rng.random() < 0.4:
            agent = rng.choice(others)
            th.send(agent, system, "Deliver", "tell", f"to main: {th.words(4)}")
            th.send(system, engine, "Deliver", "tell", f"from {agent.split('/')[1]}: {th.words(4)}")
        if rng.random() < 0.06:
            th.send(system, engine, "Pause", "tell", "pause requested by the operator")
            th.mark("pause", system, "paused by the operator")
        if rng.random() < 0.1:
            th.send(clock, engine, "Tick", "tell", "timer fired")
    _make_sure_of_every_kind(th, inputs, engine, system, analyzer)
    if needle is not None:
        th.messages[len(th.messages) // 2]["summary"] = f"the {needle} is here"[:120]
    th.states[-1]["t1"] = th.t
    th.states[-1]["seq1"] = th.seq
    return {
        "version": 1, "thread": "main", "system": "team" if agents else None, "at": None, "last_seq": th.seq,
        "started_at": "2026-11-26T21:00:00.000000Z", "duration": th.t, "budget": budget, "actors": actors,
        "messages": th.messages, "states": th.states, "model_calls": th.calls, "texts": th.texts, "marks": th.marks,
        "counts": {"records": th.seq, "messages": len(th.messages), "model_calls": len(th.calls)},
    }


def _make_sure_of_every_kind(th: _Thread, *ids: str) -> None:
    """Even a short trace has every state and mark type (a test asks for each)."""
    inputs, engine, system, analyzer = ids
    seen_states = {s["state"] for s in th.states}
    for state in STATES:
        if state not in seen_states:
            th.send(inputs, engine, "UserInput", "tell", f"input: reach {state}")
            th.enter(state)
    seen_marks = {m["type"] for m in th.marks}
    for kind in MARK_TYPES:
        if kind not in seen_marks:
            th.send(system, engine, "Tick", "tell", f"({kind} follows)")
            th.mark(kind, analyzer if kind == "notification" else system, f"a {kind}, made sure of")
    th.enter("WaitingInput")


def empty_trace() -> dict[str, Any]:
    """A thread with no records at all."""
    return {"version": 1, "thread": "empty", "system": None, "at": None, "last_seq": 0,
            "started_at": "2026-11-26T21:00:00.000000Z", "duration": 0.0, "budget": 0, "actors": [],
            "messages": [], "states": [], "model_calls": [], "texts": {}, "marks": [],
            "counts": {"records": 0, "messages": 0, "model_calls": 0}}


def one_actor_trace() -> dict[str, Any]:
    """One actor that talks to itself, with unicode and markup in every text, stopped at a seq."""
    me = "engine/ü-ñ"
    texts = {f"t{n}": text for n, text in enumerate(NASTY_TEXTS)}
    messages = [{"i": n, "seq": n + 1, "t": 0.25 * n, "from": me, "to": me, "kind": kind, "mode": mode,
                 "summary": NASTY_TEXTS[n % len(NASTY_TEXTS)][:120], "reply_to": 0 if mode == "reply" else None}
                for n, (kind, mode) in enumerate((("Wake", "ask"), ("Woke", "reply"), ("Note", "tell"), ("Shout", "publish")))]
    return {
        "version": 1, "thread": "solo — 東京 </script>", "system": None, "at": 4, "last_seq": 4,
        "started_at": "2026-11-26T21:00:00.000000Z", "duration": 0.75, "budget": 100,
        "actors": [{"id": me, "role": "engine", "label": "ü-ñ 🙂"}],
        "messages": messages,
        "states": [{"state": "PendingInput", "t0": 0.0, "t1": 0.75, "seq0": 1, "seq1": 4}],
        "model_calls": [{"n": 0, "seq": 2, "t": 0.25, "model": "scripted", "tokens": 120, "budget": 100,
                         "levels": {"live": 100, "recent": 0, "gist": 0, "recap": 20, "omitted": 2},
                         "entries": [{"id": "r0", "level": "recap", "tokens": 20, "text": "t3"},
                                     {"id": "e1", "level": "live", "tokens": 50, "text": "t0"},
                                     {"id": "e2", "level": "live", "tokens": 50, "text": "t2"}],
                         "output": "t1", "usage": None, "sent_tokens": None, "shared_tokens": None}],
        "texts": texts,
        "marks": [{"seq": 3, "t": 0.5, "type": "denial", "author": me, "summary": NASTY_TEXTS[2][:120]}],
        "counts": {"records": 4, "messages": 4, "model_calls": 1},
    }
