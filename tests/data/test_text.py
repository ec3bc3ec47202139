"""The first look at a streamed file: UTF-8 checked and hints found in one pass of its bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.data.errors import DataError
from runner.data.limits import HINT_TEXTS
from runner.data.text import check_utf8

CHUNK = 1 << 20  # what check_utf8 reads at a time


@pytest.mark.parametrize("offset", [0, 1, 3, 7, 8])
def test_a_hint_across_two_chunks_is_found(tmp_path: Path, offset: int) -> None:
    # "Infinity" starts `offset` bytes before the first chunk ends, so it spans both chunks.
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"a" * (CHUNK - offset) + b"Infinity" + b"b" * 100)
    assert check_utf8(path, HINT_TEXTS) is True


def test_no_hint_and_multibyte_text(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("é" * CHUNK + "\\u00e9 Na N Inf", encoding="utf-8")  # é spans the chunk edge
    assert check_utf8(path, HINT_TEXTS) is False


def test_a_surrogate_escape_is_a_hint_and_bad_bytes_are_located(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"a": "\\ud800"}\n')
    assert check_utf8(path, HINT_TEXTS) is True
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(DataError) as info:
        check_utf8(path, HINT_TEXTS)
    assert str(info.value) == (f"{path}, line 2: invalid UTF-8 (byte 0xff at column 8); save "
                               "the file as UTF-8")
