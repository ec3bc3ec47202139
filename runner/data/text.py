"""Opening data files as UTF-8 text: a byte-order mark is skipped, a directory or a missing
file is said to be one, and invalid UTF-8 is located by line."""

from __future__ import annotations

import codecs
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from runner.data.errors import DataError

#: UTF-8, with a byte-order mark at the start skipped (as Windows editors write it).
ENCODING = "utf-8-sig"


_SPECIAL = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
            stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def check_file(path: Path) -> None:
    """Refuse a path that is not a readable file, saying what it is: a FIFO or a device
    (``/dev/zero``) would block or never end, and is never opened.

    Raises:
        DataError: The path is a directory, a special file or does not exist.
    """
    if path.is_dir():
        raise DataError(str(path), None, None, "is a directory; expected a file")
    if not path.is_file():
        kind = _SPECIAL.get(stat.S_IFMT(path.stat().st_mode)) if path.exists() else None
        raise DataError(str(path), None, None,
                        f"is {kind}, not a regular file" if kind else "file not found")


@contextmanager
def open_text(path: Path, newline: str | None = None) -> Iterator[TextIO]:
    """Open a data file for reading as UTF-8 text.

    Raises:
        DataError: The file cannot be read, or holds invalid UTF-8 (raised where the text is
            read, naming the line).
    """
    try:
        with path.open("r", encoding=ENCODING, newline=newline) as fh:
            yield fh
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    except (IsADirectoryError, FileNotFoundError):
        check_file(path)
        raise
    except OSError as exc:  # no permission, an I/O error (/proc/self/mem)
        raise DataError(str(path), None, None, f"cannot be read ({exc.strerror})") from None


def check_utf8(path: Path, hints: tuple[str, ...] = ()) -> bool:
    """Refuse a file that is not UTF-8 before any of it is used: a streamed file (JSON Lines,
    CSV) is read batch by batch, and its later batches are read after the first were answered.
    One pass over the bytes (about 250 MB a second on this project's machine).

    Args:
        path: The file.
        hints: ASCII strings to look for on the way.

    Returns:
        Whether one of `hints` occurs in the text.

    Raises:
        DataError: The first invalid line and byte.
    """
    decoder = codecs.getincrementaldecoder(ENCODING)()
    # The hints are ASCII: in UTF-8 their bytes occur only as themselves, so the raw bytes are
    # searched (the decoded text would cost a second copy of each chunk).
    needles = [hint.encode("ascii") for hint in hints]
    found, tail = False, b""
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                decoder.decode(chunk)
                if not found:
                    seam = tail + chunk[:16]  # a match across two chunks
                    found = any(needle in chunk or needle in seam for needle in needles)
                    tail = chunk[-16:]
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise utf8_error(path) from None
    except OSError as exc:
        raise DataError(str(path), None, None, f"cannot be read ({exc.strerror})") from None
    return found


def read_text(path: Path) -> str:
    """A whole data file as text (see :func:`open_text`)."""
    with open_text(path) as fh:
        return fh.read()


def utf8_error(path: Path) -> DataError:
    """The located error for a file that is not valid UTF-8: its first bad line and byte.

    A decoder reads ahead, so the line is found again by decoding the file line by line (UTF-8
    never splits a character over a newline byte).
    """
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return DataError(str(path), f"line {lineno}", None,
                                 f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1}); save the file as UTF-8")
    return DataError(str(path), None, None, "invalid UTF-8; save the file as UTF-8")
