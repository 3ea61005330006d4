"""Validators, and the texts of the queries a validation run needs (`Prepared`), kept on disk
between processes: reading a shapes graph and rendering its queries costs a
`tgsparql validate --session` process several times what validating the session does, and
loading the template engine at all costs it as much again.

An entry is kept for exactly what it was built from (a validator: the shapes' files, by their
content and where they are, as relative IRIs resolve against it; a text: its template and
values), the store dialect and the code's version (the modules and query templates that build
and run it, by size and modification time, pyoxigraph's version, Python's): the entry holds all
of these and is read back only when they are byte for byte those of the caller, so a change to
any of them is another entry, never a stale one. Its file is named by a checksum of them; two
that share a name take turns in one file, each built again when the other was kept last. The
files a shapes file imports are checked again on each read. An entry is written to a file of
its own and renamed into place, so processes building it at once each leave a whole entry and a
reader sees a whole entry or none; it holds a checksum of its contents, checked before anything
is read back, so a torn or altered entry is built again, never trusted. (No cryptographic hash:
nothing is trusted for its hash alone, and loading OpenSSL would cost each command 3 ms.)

Where: the directory TGSPARQL_VALIDATOR_CACHE names, `off` for none; by default
`$XDG_CACHE_HOME/tgsparql/validators` (`~/.cache/tgsparql/validators`). Per user, not beside
the store: an entry depends on the shapes and the code, not on the data, so one serves every
store, and a store may be read only or shared. The directory must be the user's own and
writable by no one else (a pickled object runs code when read back); any other is no cache,
not an error, as is one that cannot be written.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import pyoxigraph as ox

from tgsparql.rdf.templates import Prepared, Templates, package_folder
from tgsparql.rdf.terms import Dialect
from tgsparql.validation.validator import Validator

CACHE_ENVIRONMENT = "TGSPARQL_VALIDATOR_CACHE"
CACHE_OFF = "off"
MAGIC = b"tgsparql kept 2\n"
KEPT_ENTRIES = 32
"""Entries kept in the directory; the least recently written go first (an entry of an older
code version is never read again)."""

_CODE = (("tgsparql.validation", ".py"), ("tgsparql.rdf", ".py"), ("tgsparql.queries", ".rq"))
"""The folders (with their subfolders) whose files build, hold or run what is kept: the modules
of the validator and of the templates, and every query template."""
T = TypeVar("T")


def cache_directory() -> Path | None:
    """Where validators are kept, or None when the setting turns the cache off."""
    setting = os.environ.get(CACHE_ENVIRONMENT, "").strip()
    if setting.lower() == CACHE_OFF:
        return None
    if setting:
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tgsparql" / "validators"


def kept_validator(
    sources: Sequence[tuple[str, bytes]], dialect: Dialect, build: Callable[[], Validator]
) -> Validator:
    """The validator `build` makes from the shapes `sources` (each file's identity and
    content), read back when kept and still right; else built, with every query of a run over a
    few focus nodes rendered (`Validator.prepare`), and kept."""

    def prepared() -> Validator:
        validator = build()
        validator.prepare()
        return validator

    return kept(Validator, [(b"validator", b""), *sources], dialect, prepared,
                lambda validator: validator.shapes.files)


def kept_prepared(name: str, templates: Templates, /, **params: Any) -> Prepared:
    """Template `name` rendered with `params` (stand-ins among them) once, then read back."""
    sources = [(b"template", name.encode()), (b"values", repr(sorted(params.items())).encode())]
    return kept(Prepared, sources, templates.dialect,
                lambda: templates.prepare(name, **params))


def kept(
    kind: type[T], sources: Sequence[tuple[str | bytes, bytes]], dialect: Dialect,
    build: Callable[[], T], imported: Callable[[T], Iterable[Path]] = lambda _: (),
) -> T:
    """What `build` makes of `sources`, read back from the cache when an entry is there and
    still right (a `kind`; the files `imported` names as they were); else built and kept."""
    directory = _usable(cache_directory())
    if directory is None:
        return build()
    key = _key(sources, dialect)
    entry = directory / f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}.pickle"
    found = _read(entry, key, kind)
    if found is None:
        found = build()
        _write(directory, entry, key, found, imported(found))
    return found


def _usable(directory: Path | None) -> Path | None:
    """The directory, made if need be (mode 0700), when it is the user's own and no one else
    can write to it; else None."""
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = directory.stat()
    except OSError:
        return None
    if status.st_uid != os.getuid() or status.st_mode & 0o022:
        return None
    return directory


def _key(sources: Sequence[tuple[str | bytes, bytes]], dialect: Dialect) -> bytes:
    """Everything an entry was built from, each part preceded by its length."""
    parts = [_code_version(), dialect.encode()]
    for name, content in sources:
        parts += [name.encode() if isinstance(name, str) else name, content]
    return b"".join(b"%d:%s" % (len(part), part) for part in parts)


@cache
def _code_version() -> bytes:
    """What an entry depends on besides what it was built from: the files of `_CODE`, each by
    its path, size and modification time (as Python tells its bytecode from a changed source:
    reading them all would cost each process more than reading the entry), pyoxigraph's and
    Python's versions."""
    listed = [f"{ox.__version__} {sys.version} {pickle.HIGHEST_PROTOCOL}\n"]
    for package, suffix in _CODE:
        pending = [package_folder(package)]
        while pending:
            with os.scandir(pending.pop()) as found:
                for entry in sorted(found, key=lambda entry: entry.name):
                    if entry.is_dir() and not entry.name.startswith(("__", ".")):
                        pending.append(Path(entry.path))
                    elif entry.name.endswith(suffix):
                        status = entry.stat()
                        listed.append(f"{entry.path}\0{status.st_size}\0{status.st_mtime_ns}\n")
    return "".join(listed).encode()


def _read(entry: Path, key: bytes, kind: type[T]) -> T | None:
    """What the entry holds when the entry is whole, was kept for `key`, holds a `kind`, and the
    files it names are as they were; else None."""
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    opened = _opened(data)
    if opened is None or opened[0] != key:
        return None
    collecting = gc.isenabled()
    gc.disable()  # the objects read back all live on: passes of the collector over them free
    try:  # nothing (a validator is tens of thousands of objects: about a third of the read)
        found, imported = pickle.loads(opened[1])
    except Exception:  # a whole entry this code cannot read back: built again, as a stale one
        return None
    finally:
        if collecting:
            gc.enable()
    if not isinstance(found, kind):
        return None
    if any(_content(Path(path)) != content for path, content in imported):
        return None
    return found


def _write(
    directory: Path, entry: Path, key: bytes, found: object, imported: Iterable[Path]
) -> None:
    """The entry written whole under a name of its own, then renamed into place; the oldest
    entries beyond KEPT_ENTRIES removed. A directory that cannot be written keeps nothing."""
    files = [(str(path), _content(path)) for path in imported]
    payload = pickle.dumps((found, files), protocol=pickle.HIGHEST_PROTOCOL)
    partial = directory / f"{entry.stem}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(_whole(key, payload))
        os.replace(partial, entry)
        entries = sorted(directory.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-KEPT_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        partial.unlink(missing_ok=True)


def _whole(key: bytes, payload: bytes) -> bytes:
    """An entry's bytes: MAGIC, the CRC-32 of the rest, the key's length, the key, the payload."""
    rest = len(key).to_bytes(8, "big") + key + payload
    return MAGIC + zlib.crc32(rest).to_bytes(4, "big") + rest


def _opened(data: bytes) -> tuple[memoryview, memoryview] | None:
    """The key and payload of an entry's bytes when they are whole; else None. Views, not
    copies: an entry is most of a megabyte."""
    head = len(MAGIC)
    rest = memoryview(data)[head + 4:]
    if data[:head] != MAGIC or zlib.crc32(rest).to_bytes(4, "big") != data[head:head + 4]:
        return None
    size = int.from_bytes(rest[:8], "big")
    if len(rest) < 8 + size:
        return None
    return rest[8:8 + size], rest[8 + size:]


def _content(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
