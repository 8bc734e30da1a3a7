"""How the SQLite store keeps a long text: zlib, with a preset dictionary of the records' keys.

A record's payload or a snapshot's state of at least :data:`COMPRESS_AT_LEAST` UTF-8 bytes
is stored as a BLOB holding a zlib stream (RFC 1950) when that is shorter than the text, and
as TEXT otherwise. Readers tell the two apart by the value's SQLite storage class, so one
store holds both (a store of format 1 holds only text). Checksums are over the text, never
over the bytes stored: a record verifies the same whichever way it was kept.

Every stream is made with the preset dictionary :data:`DICTIONARY`: the JSON of each kind of
record with its texts left empty. Beyond its texts, a record is mostly its keys
(``"content":{"live":{"text":`` ...); with the dictionary they cost a few bytes of
back-references instead of being spelled out in each record. The dictionary belongs to store
format 2, like the table layout: changing one byte of it makes every compressed row of every
store unreadable. A better dictionary needs a new store format version; the stream names its
dictionary by its Adler-32 (zlib's DICTID), which a later format can choose by.

The checksum is stored as its 32 bytes (a BLOB) rather than its 64 hex digits (TEXT); read
back, it is hex again, as :class:`~..base._records.StoredRecord` holds it.
"""

from __future__ import annotations

import zlib

COMPRESS_AT_LEAST = 128
"""Texts shorter than this many UTF-8 bytes are stored as text without trying to compress
them: below it, the dictionary still saves a few tens of bytes, but such records are rare
(``ToolStarted``, ``AccessDenied``) and stay legible to ``sqlite3``."""

LEVEL = 6
"""zlib's compression level, its default: lower levels compress a long tool output in about
half the time but store noticeably more of it; 9 is slower and stores hardly less. The work
is done in the worker thread that writes the batch (zlib releases the GIL meanwhile)."""

_SHAPES = (
    # rarest first: a back-reference into the dictionary costs fewer bits the nearer to its
    # end it points, so the shapes of a step's records come last
    '{"sender":"","capability":"edit","action":"","type":"AccessDenied"}',
    '{"call_id":"","name":"","type":"ToolStarted"}',
    '{"notification":{"id":"n","sender":"","text":"","posted_at":"+00:00"},"type":"NotificationPosted"}',
    '{"text":"","type":"SystemPromptSet"}',
    '{"budget":0,"tools":[{"name":"","description":"","parameters_json":"","idempotent":true,'
    '"retention":"compressible"}],"apps":[{"name":"","source":""}],"type":"ThreadConfigured"}',
    '{"entries":[{"id":"e","revision":1,"author":"engine/","created_at":"+00:00","retention":"critical",'
    '"content":{"live":{"text":"","tokens":0},"recent":{"text":"","tokens":0},"gist":{"text":"","tokens":0}},'
    '"text":"","notifications":[],"folded":false,"type":"ModelInputEntry"}],"removed":[],"type":"HistoryEdited"}',
    '{"recap":{"id":"e","revision":1,"author":"recap/","created_at":"+00:00","retention":"critical",'
    '"content":{"live":{"text":"","tokens":0},"recent":"live","gist":{"text":"","tokens":0}},"covers":[""],'
    '"strategy":"structured","folded":false,"data":""},"folded":[""],"type":"EntriesFolded"}',
    '{"result":{"call_id":"","name":"","status":"failed","content":{"live":{"text":"","tokens":0},'
    '"recent":"live","gist":{"text":"","tokens":0}}},"effect":{"app":"","text":"","type":"NotebookEdited"},'
    '"type":"ToolResultRecorded"}',
    '{"entry":{"id":"e","revision":1,"author":"engine/","created_at":"+00:00","retention":"critical",'
    '"content":{"live":{"text":"","tokens":0},"recent":"live","gist":{"text":"","tail":0,"tokens":0}},'
    '"text":"","notifications":[],"folded":false,"type":"ModelInputEntry"},"type":"EntryAppended"}',
    '{"result":{"call_id":"","name":"","status":"ok","content":{"live":{"text":"","tokens":0},'
    '"recent":{"head":0,"text":"","tail":0,"tokens":0},"gist":{"text":"","tokens":0}}},"effect":null,'
    '"type":"ToolResultRecorded"}',
    '{"result":{"call_id":"","name":"","status":"ok","content":{"live":{"text":"","tokens":0},'
    '"recent":"live","gist":{"text":"","tokens":0}}},"effect":null,"type":"ToolResultRecorded"}',
    '{"entry":{"id":"e","revision":1,"author":"engine/","created_at":"+00:00","retention":"compressible",'
    '"content":{"live":{"text":"","tokens":0},"recent":"live","gist":"live"},"results":[],"notifications":[],'
    '"folded":false},"type":"ToolResultsAppended"}',
    '{"entry":{"id":"e","revision":1,"author":"engine/","created_at":"+00:00","retention":"compressible",'
    '"content":{"live":{"text":"","tokens":0},"recent":"live","gist":"live"},'
    '"tool_calls":[{"id":"","name":"","arguments":""}],"model":"","usage":{"prompt_tokens":0,'
    '"completion_tokens":0},"folded":false,"recent_arguments":[],"gist_arguments":[],'
    '"type":"ModelOutputEntry"},"type":"EntryAppended"}',
)

DICTIONARY = "".join(_SHAPES).encode("utf-8")
"""zlib's preset dictionary for every compressed text of store format 2. Never change it."""


def pack_text(text: str) -> str | bytes:
    """What the store writes for ``text``: its zlib stream (bytes) when that is shorter and
    the text has at least :data:`COMPRESS_AT_LEAST` UTF-8 bytes, else the text itself."""
    data = text.encode("utf-8")
    if len(data) < COMPRESS_AT_LEAST:
        return text
    compressor = zlib.compressobj(LEVEL, zdict=DICTIONARY)
    packed = compressor.compress(data) + compressor.flush()
    return packed if len(packed) < len(data) else text


def unpack_text(value: object, column: str) -> str:
    """The text a stored value holds: the value itself (TEXT), or its zlib stream's (BLOB).

    Raises:
        ValueError: the value is neither, or its stream is damaged, cut short, followed by
            other bytes, or not UTF-8 text. The message names ``column``.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, bytes):
        raise ValueError(f"column {column} holds a {type(value).__name__}, not text or compressed text")
    decompressor = zlib.decompressobj(zdict=DICTIONARY)
    try:
        data = decompressor.decompress(value)
    except zlib.error as exc:
        raise ValueError(f"the compressed {column} does not decompress (zlib: {exc})") from None
    if not decompressor.eof:
        raise ValueError(f"the compressed {column} is cut short")
    if decompressor.unused_data:
        raise ValueError(f"the compressed {column} has {len(decompressor.unused_data)} bytes after its end")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the compressed {column} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def pack_checksum(checksum: str) -> bytes:
    """The 32 bytes of a hex SHA-256 checksum, as the store writes it."""
    return bytes.fromhex(checksum)


def unpack_checksum(value: object) -> str:
    """A stored checksum as hex: its 32 bytes (BLOB), or the hex text a format-1 row holds.

    Raises:
        ValueError: the value is neither.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bytes) and len(value) == 32:
        return value.hex()
    size = f" of {len(value)} bytes" if isinstance(value, bytes) else ""
    raise ValueError(f"column checksum holds a {type(value).__name__}{size}, not a SHA-256 checksum")
