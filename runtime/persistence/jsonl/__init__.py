"""The JSONL backend (``jsonl:DIR``): one folder per thread, its records as lines of JSON, its
snapshots as files beside them."""

from __future__ import annotations

from ._jsonl import JsonlBackend

__all__ = ["JsonlBackend"]
