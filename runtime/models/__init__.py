"""Model clients: a real OpenAI-compatible one, offline ones, and wrappers for retries and faults.

Every client implements :class:`ModelClient`: one :meth:`~ModelClient.complete` call is one
attempt that streams text through ``on_text`` and returns the accumulated
:class:`~livecontext.protocol.history.ModelReply`. Retries live in one wrapper,
:class:`RetryingModel`; :func:`open_model_client` opens a client from a spec string
(``echo``, ``scripted:PATH``, ``openai:MODEL``, ``cassette:PATH:SPEC``) already wrapped in it.

For users' tests: :class:`ScriptedModel` (answers from a script, complains about unused turns)
and :class:`FaultInjectingModel` (makes chosen attempts fail), and :class:`CassetteModel`
(records a model's answers into a file once, replays them offline; :func:`cassette_mode`).
"""

from __future__ import annotations

from ._cassette import (
    CASSETTE_ENV,
    CassetteError,
    CassetteMissError,
    CassetteMode,
    CassetteModel,
    cassette_mode,
    split_cassette_spec,
)
from ._client import ModelClient, TextCallback
from ._echo import EchoModel
from ._errors import (
    FailureKind,
    IncompatibleServerError,
    ModelCallFailed,
    ModelRequestRejected,
    ScriptError,
    ScriptExhaustedError,
    TransientModelError,
    UnusedTurnsError,
)
from ._faults import FaultInjectingModel
from ._open import SPEC_FORMS, make_model_client, open_model_client
from ._prices import FREE, OFFLINE_MODELS, Price, PriceError, default_prices, find_price, price_from_table
from ._retry import RetryCallback, RetryingModel, RetryPolicy
from ._scripted import ScriptedModel

__all__ = [
    "CASSETTE_ENV",
    "FREE",
    "OFFLINE_MODELS",
    "SPEC_FORMS",
    "CassetteError",
    "CassetteMissError",
    "CassetteMode",
    "CassetteModel",
    "EchoModel",
    "FailureKind",
    "FaultInjectingModel",
    "IncompatibleServerError",
    "ModelCallFailed",
    "ModelClient",
    "ModelRequestRejected",
    "OpenAIModel",
    "Price",
    "PriceError",
    "RetryCallback",
    "RetryPolicy",
    "RetryingModel",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedModel",
    "TextCallback",
    "TransientModelError",
    "UnusedTurnsError",
    "cassette_mode",
    "default_prices",
    "find_price",
    "make_model_client",
    "open_model_client",
    "price_from_table",
    "split_cassette_spec",
]


def __getattr__(name: str) -> object:
    # `openai` takes about a second to import: load it only when OpenAIModel is used.
    if name == "OpenAIModel":
        from ._openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
