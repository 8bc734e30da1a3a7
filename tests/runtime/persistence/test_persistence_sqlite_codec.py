"""How the SQLite store keeps a long text: compressed with its dictionary, or as text."""

from __future__ import annotations

import hashlib
import json
import random
import string
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from livecontext.runtime.persistence.sqlite._compression import (
    COMPRESS_AT_LEAST,
    DICTIONARY,
    pack_checksum,
    pack_text,
    unpack_checksum,
    unpack_text,
)

STEP_RECORD = json.dumps({
    "result": {"call_id": "call_1_0", "name": "bash", "status": "ok", "content": {
        "live": {"text": "\n".join(f"src/pkg/mod_{n}.py:{n}: return helper(value)" for n in range(12)),
                 "tokens": 140},
        "recent": "live", "gist": {"text": "bash ok, 12 lines", "tokens": 6}}},
    "effect": None, "type": "ToolResultRecorded"}, separators=(",", ":"))
"""A tool result as the history writes it: long enough to be stored compressed."""


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=600))
def test_any_text_reads_back_as_it_was_whether_stored_compressed_or_not(text: str) -> None:
    stored = pack_text(text)
    assert isinstance(stored, (str, bytes))
    assert unpack_text(stored, "payload") == text


def test_a_records_json_is_stored_compressed_in_a_fraction_of_its_size() -> None:
    stored = pack_text(STEP_RECORD)
    assert isinstance(stored, bytes)
    assert len(stored) < len(STEP_RECORD) // 3
    assert unpack_text(stored, "payload") == STEP_RECORD


def test_texts_shorter_than_the_threshold_in_utf8_bytes_stay_text_and_longer_ones_are_compressed() -> None:
    assert COMPRESS_AT_LEAST == 128
    assert pack_text("x" * 127) == "x" * 127
    assert isinstance(pack_text("x" * 128), bytes)
    assert pack_text("é" * 63 + "x") == "é" * 63 + "x"  # 127 bytes in UTF-8
    assert isinstance(pack_text("é" * 64), bytes)  # 64 characters, 128 bytes


def test_a_text_that_compression_would_not_shorten_is_stored_as_text() -> None:
    rng = random.Random(14)
    noise = "".join(rng.choices(string.ascii_letters + string.digits + string.punctuation, k=200))
    assert pack_text(noise) == noise


def test_a_compressed_text_is_a_zlib_stream_made_with_the_stores_dictionary() -> None:
    stored = pack_text(STEP_RECORD)
    assert isinstance(stored, bytes)
    assert stored[1] & 0x20  # FDICT: a preset dictionary, named by its Adler-32 (DICTID)
    assert int.from_bytes(stored[2:6], "big") == zlib.adler32(DICTIONARY)
    assert zlib.decompressobj(zdict=DICTIONARY).decompress(stored).decode() == STEP_RECORD
    with pytest.raises(zlib.error):
        zlib.decompress(stored)  # without it, zlib cannot read the stream


def test_the_dictionary_is_the_one_store_format_2_is_written_with() -> None:
    assert hashlib.sha256(DICTIONARY).hexdigest() == (
        "a4bf0eaad2db0b4bfd10f26a79cc75b9df971a5a30ce57cb9d332268dd7bd3cf"
    ), ("the dictionary changed: every compressed row of every format-2 store would no longer "
        "read; put it back, and make a new store format version for a new dictionary")


def test_every_single_flipped_byte_of_a_compressed_text_is_an_error_never_other_text() -> None:
    stored = pack_text(STEP_RECORD)
    assert isinstance(stored, bytes)
    for index in range(len(stored)):
        damaged = bytearray(stored)
        damaged[index] ^= 0x01
        with pytest.raises(ValueError, match="the compressed payload"):
            unpack_text(bytes(damaged), "payload")


@pytest.mark.parametrize(("damage", "message"), [
    (lambda b: b[:-7], "the compressed state is cut short"),
    (lambda b: b + b"\x00\x01", "the compressed state has 2 bytes after its end"),
    (lambda b: bytes([b[0] ^ 0x01]) + b[1:],
     r"the compressed state does not decompress \(zlib: Error -3 while decompressing data: incorrect header check\)"),
])
def test_a_damaged_stream_is_a_value_error_naming_the_column_and_never_a_zlib_error(
        damage: object, message: str) -> None:
    stored = pack_text(STEP_RECORD)
    assert isinstance(stored, bytes)
    with pytest.raises(ValueError, match=message):
        unpack_text(damage(stored), "state")  # type: ignore[operator]


def test_a_stream_of_bytes_that_are_not_utf8_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"the compressed payload is not UTF-8 text \(invalid start byte at byte 0\)"):
        unpack_text(zlib.compress(b"\xff" * 200), "payload")


def test_a_value_that_is_neither_text_nor_bytes_is_a_value_error_naming_its_type() -> None:
    with pytest.raises(ValueError, match="column payload holds a int, not text or compressed text"):
        unpack_text(7, "payload")


def test_a_checksum_is_stored_as_its_32_bytes_and_read_back_as_hex_as_is_a_format_1_hex_one() -> None:
    checksum = hashlib.sha256(b"x").hexdigest()
    stored = pack_checksum(checksum)
    assert stored == hashlib.sha256(b"x").digest()
    assert unpack_checksum(stored) == checksum
    assert unpack_checksum(checksum) == checksum  # format 1 kept the hex text


@pytest.mark.parametrize(("value", "message"), [
    (b"\x00" * 31, "column checksum holds a bytes of 31 bytes, not a SHA-256 checksum"),
    (None, "column checksum holds a NoneType, not a SHA-256 checksum"),
])
def test_a_checksum_of_another_length_or_type_is_a_value_error(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        unpack_checksum(value)
