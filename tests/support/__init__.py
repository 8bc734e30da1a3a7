"""Helpers shared by livecontext's tests (a local OpenAI-compatible server, ...)."""
