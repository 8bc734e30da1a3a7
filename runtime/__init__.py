"""The actor kernel, persistence, model clients and token counting.

Public surface of the kernel: :class:`Actor` and ``@handler``, :func:`open_runtime` and
:class:`Runtime`, :class:`Context` (``tell``/``ask``/``publish``), :class:`RestartPolicy`,
the audit types and the kernel's errors, and the garbage-collector policy
(:data:`GC_THRESHOLDS`, :func:`gc_tuned`), the bridge from asyncio (:class:`InGuest`: the
runtime as a Trio guest of an asyncio loop), and the clock a runtime stamps with
(:class:`RuntimeClock`: :class:`WallClock`, or :class:`VirtualClock` for virtual time).
Testing helpers live in :mod:`livecontext.runtime.testing`.
"""

from __future__ import annotations

from ._actor import Actor, handler
from ._audit import AuditEvent, AuditHook, AuditRecord
from ._clock import DEFAULT_EPOCH, RuntimeClock, VirtualClock, WallClock
from ._cell import SUPERVISION_TOPIC, SUPERVISOR_ID, RestartPolicy
from ._gc import GC_THRESHOLDS, gc_tuned
from ._guest import GuestCall, InGuest, uncancellable
from ._errors import (
    ActorError,
    ActorStoppedError,
    AskCycleError,
    AskTimeoutError,
    DeadlockError,
    DuplicateActorError,
    LivecontextError,
    MailboxFullError,
    ModelError,
    RemoteActorError,
    UnhandledMessageError,
    UnknownActorError,
    UsageError,
    error_leaves,
)
from ._open import open_runtime
from ._post import PendingReply
from ._runtime import ActorRef, Context, MailboxStatistics, Runtime, RuntimeStatistics
from ._stepping import Delivery, SteppingScheduler

__all__ = [
    "DEFAULT_EPOCH",
    "GC_THRESHOLDS",
    "SUPERVISION_TOPIC",
    "SUPERVISOR_ID",
    "Actor",
    "ActorError",
    "ActorRef",
    "ActorStoppedError",
    "AskCycleError",
    "AskTimeoutError",
    "AuditEvent",
    "AuditHook",
    "AuditRecord",
    "Context",
    "DeadlockError",
    "Delivery",
    "DuplicateActorError",
    "LivecontextError",
    "error_leaves",
    "MailboxFullError",
    "MailboxStatistics",
    "ModelError",
    "PendingReply",
    "RemoteActorError",
    "RestartPolicy",
    "Runtime",
    "RuntimeClock",
    "RuntimeStatistics",
    "SteppingScheduler",
    "UnhandledMessageError",
    "UnknownActorError",
    "UsageError",
    "VirtualClock",
    "WallClock",
    "GuestCall",
    "InGuest",
    "gc_tuned",
    "uncancellable",
    "handler",
    "open_runtime",
]
