"""The PostgreSQL backend (``postgresql://...``).

Importing it imports psycopg (the ``postgres`` extra): the URL opener imports this package only
for such a URL."""

from __future__ import annotations

from ._postgres import describe_url, open_postgres

__all__ = ["describe_url", "open_postgres"]
