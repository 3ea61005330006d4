"""The store a reading command names, opened while the command's modules load.

A CI step runs `tgsparql validate --store DIR --session S` once per session: most of such a
command is Python importing click and the validator, and pyoxigraph opening the store, which
releases the GIL. Opened in a thread as soon as the command line is known, the store is ready
when the command asks for it. Only commands that open their store read-only, as last committed
(`reading` in `options`), and only a guess from the command line: a store opened for another
path than the command settles on is closed unused.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyoxigraph as ox

STORE_MARKER = "CURRENT"
"""The file the embedded store's database keeps in every store directory it has created."""
READING_COMMANDS = frozenset({"validate", "drift", "check"})
"""The commands whose store is opened by `options.reading`."""


class _Opening:
    """One store being opened read-only in a thread; what it opened, or None if it failed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.store: ox.Store | None = None
        self.thread = threading.Thread(target=self._open, name="tgsparql-open-ahead",
                                       daemon=True)
        self.thread.start()
        atexit.register(self.thread.join)  # never exit while the store's files are being read

    def _open(self) -> None:
        import pyoxigraph

        try:
            self.store = pyoxigraph.Store.read_only(self.path)
        except (OSError, RuntimeError, ValueError):
            self.store = None  # the command opens it again and names the problem


_opening: _Opening | None = None


def open_ahead(args: Sequence[str]) -> None:
    """Start opening the store of a reading command's command line (`--store DIR`,
    `--store=DIR`, or TGSPARQL_STORE when neither --store nor --endpoint is given)."""
    global _opening
    _opening = None  # what an earlier command of this process opened is not this one's
    if not args or args[0] not in READING_COMMANDS or "--help" in args or "-h" in args:
        return
    path = _store_path(args[1:])
    if path is not None and os.path.isfile(os.path.join(path, STORE_MARKER)):
        _opening = _Opening(path)


def opened_ahead(path: Path) -> ox.Store | None:
    """The store opened ahead for `path`, once; None when none was, or it failed."""
    global _opening
    opening, _opening = _opening, None
    if opening is None:
        return None
    opening.thread.join()
    same = opening.store is not None and os.path.realpath(opening.path) == os.path.realpath(path)
    return opening.store if same else None


def _store_path(args: Sequence[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--store" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--store="):
            return arg.removeprefix("--store=")
    if any(arg == "--endpoint" or arg.startswith("--endpoint=") for arg in args):
        return None
    return os.environ.get("TGSPARQL_STORE") or None
