"""What `tgsparql serve` is started with: the store or endpoint it serves, and its bounds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect
from tgsparql.serve.ask import AskLimits
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import StoreError


@dataclass(frozen=True)
class ServerConfig:
    store: Path | None = None
    """The on-disk store to serve, opened read-only; or None with `endpoint`."""
    endpoint: Endpoint | None = None
    """The SPARQL endpoint of a remote store to serve instead."""
    host: str = "127.0.0.1"
    port: int = 7879
    token: str | None = None
    timeout: float = 30.0
    max_results: int = 100_000
    max_request: int = 256 * 1024
    """Bytes of query string or request body at most (413 beyond)."""
    max_memory: int | None = 1 << 30
    """Bytes of data memory each query process may use (503 beyond); None for no bound."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header names accepted besides the loopback names and `host` (DNS rebinding)."""
    workers: int = 2
    page_workers: int = 1
    """Query processes /sparql may not take, kept for pages and saved queries."""
    collection: vocab.Collection = vocab.DEFAULT_COLLECTION
    log: bool = False
    ask: AskLimits | None = None
    """With limits, POST /ask answers questions, the server holding the store as its writer."""
    lock_timeout: float = 30.0
    """Seconds `--ask` waits for another writer to release the store at startup."""
    cors: tuple[str, ...] = ()
    """Origins (scheme://host[:port], lower case) whose pages may read the answers, or `*`."""
    csv_raw: bool = False
    """CSV cells as they are, without neutralising those a spreadsheet would run as formulas."""

    def __post_init__(self) -> None:
        if self.token is not None:
            check_token(self.token)
        object.__setattr__(self, "cors", tuple(check_origin(origin) for origin in self.cors))
        if (self.store is None) == (self.endpoint is None):
            raise StoreError("serve one store: an on-disk store or a SPARQL endpoint")
        if self.ask is not None and self.store is None:
            raise StoreError("--ask needs an on-disk --store to record sessions in; it does not "
                             "write to a remote endpoint")

    @property
    def dialect(self) -> Dialect:
        """The served store's dialect: an on-disk store's is the default."""
        return DEFAULT_DIALECT if self.endpoint is None else self.endpoint.dialect


def check_token(token: str) -> str:
    """The token, if a client can send it as `Authorization: Bearer TOKEN`; an empty or blank
    one would let in whoever sends an empty bearer, so it is refused like any that holds
    spaces or control characters."""
    if not token.strip():
        raise StoreError("the serve token is empty: give a secret, or no token at all")
    if any(char.isspace() or not char.isprintable() for char in token):
        raise StoreError("the serve token holds spaces or control characters, which an "
                         "Authorization header cannot carry")
    return token


def check_origin(origin: str) -> str:
    """The origin as browsers send it in Origin (scheme://host[:port], lower case, no path),
    or `*`; anything else could never match, so it is refused."""
    normal = origin.strip().lower().rstrip("/")
    if normal == "*":
        return normal
    parts = urlsplit(normal)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query \
            or parts.fragment or "@" in parts.netloc:
        raise StoreError(f"--cors {origin!r:.100} is not an origin such as "
                         "https://example.org or http://localhost:3000, nor *")
    return normal


def size_text(size: int | None) -> str:
    """Bytes as people write them: 1 GiB, 512 MiB."""
    if size is None:
        return "unbounded"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"
