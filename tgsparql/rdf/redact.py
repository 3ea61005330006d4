"""Secrets kept out of what tgsparql records, logs or prints: the credentials a URL carries.

An LLM's or an endpoint's URL may hold a user and password (`http://user:pass@host/v1`) or a
key in its query (`?key=…`, `?api_key=…`, `?token=…`). Such a URL reaches error messages, and
from there a failed session's `tg:error` (served by the BI queries and the session page), the
`--log-llm` file and stderr. Every one of those goes through `redacted_text`.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN: Final = "REDACTED"
SECRET_PARAMETER = re.compile(
    r"(?:^|[_-])(?:key|apikey|token|secret|password|passwd|pwd|auth|authorization|sig|"
    r"signature|credential|credentials|session)(?:$|[_-])",
    re.IGNORECASE,
)
"""A query parameter whose name says it holds a secret (`key`, `api_key`, `access_token`, …)."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]*[^\s\"'<>`.,:;)\]}]")
"""A URL in running text, without the punctuation that ends the sentence around it."""


def redacted_url(url: str) -> str:
    """`url` with its userinfo and its secret-looking query values replaced by REDACTED; a URL
    with neither, or that cannot be parsed, is returned as it is."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret_names = {name for name, _ in pairs if SECRET_PARAMETER.search(name)}
    userinfo = "@" in parts.netloc and host is not None
    if not (userinfo or secret_names):
        return url
    netloc = parts.netloc
    if userinfo:
        shown_host = f"[{host}]" if host is not None and ":" in host else host
        netloc = f"{HIDDEN}@{shown_host}" + (f":{port}" if port is not None else "")
    query = urlencode([(name, HIDDEN if name in secret_names else value) for name, value in pairs],
                      safe="/:") if secret_names else parts.query
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redacted_text(text: str) -> str:
    """`text` with every URL in it redacted (`redacted_url`)."""
    return _URL.sub(lambda found: redacted_url(found.group(0)), text)
