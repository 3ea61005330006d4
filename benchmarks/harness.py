"""What every benchmark shares: its command line (the sizes it runs at, with the tiny ones CI
runs under `--tiny`, a seed, the cache and the results file) and its results file (the head that
says when, where and under what load it ran; written, then printed).

A size flag left out takes its full default, or its tiny one under `--tiny`; given, it wins over
both, so a tiny run can still change one size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cache"
RESULTS = HERE / "results"

Load = tuple[float, float, float]
SizeValue = int | float | str


@dataclass(frozen=True)
class Size:
    """A flag that sets how much a benchmark does: facts, sessions, questions, runs…"""

    full: SizeValue
    tiny: SizeValue
    """What CI runs (tests/test_benchmarks.py): small enough for seconds."""
    help: str
    least: float | None = 1
    """The smallest value that makes a run; None for a value that is not a number."""


class BenchParser(argparse.ArgumentParser):
    """`--tiny`, one flag per size, then `--seed`, `--work` and `--out` where the benchmark has
    them; a benchmark adds its own flags as to any parser."""

    def __init__(self, module: str, description: str | None, sizes: dict[str, Size], *,
                 out: str, seed: int | None = None, work: str | None = None) -> None:
        super().__init__(prog=f"python -m {module}", description=description)
        self.sizes = sizes
        self.add_argument("--tiny", action="store_true",
                          help="the tiny sizes CI runs, for a run of seconds")
        for name, size in sizes.items():
            self.add_argument(f"--{name}", type=type(size.full), default=None,
                              help=f"{size.help} ({_shown(size.full)}; tiny {_shown(size.tiny)})")
        if seed is not None:
            self.add_argument("--seed", type=int, default=seed, help=f"random seed ({seed})")
        if work is not None:
            self.add_argument("--work", type=Path, default=CACHE,
                              help=f"{work} (benchmarks/cache, not in git)")
        self.add_argument("--out", type=Path, default=RESULTS / out,
                          help=f"results table (benchmarks/results/{out})")

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """The arguments, each size filled in from the full or the tiny defaults and checked."""
        args = self.parse_args(argv)
        for name, size in self.sizes.items():
            dest = name.replace("-", "_")
            if getattr(args, dest) is None:
                setattr(args, dest, size.tiny if args.tiny else size.full)
            value = getattr(args, dest)
            if size.least is not None and value < size.least:
                self.error(f"--{name} must be at least {_shown(size.least)}")
        return args


def _shown(value: SizeValue) -> str:
    return f"{value:,g}" if isinstance(value, int | float) else value


def bulk_loaded_store(directory: Path, generate: Callable[[Path], dict[str, Any]]
                      ) -> dict[str, Any]:
    """A fresh `directory` whose `store` is the TriG `generate` writes (to a file it is given),
    bulk loaded and optimised: what `generate` returned, with the quads and the seconds each
    step took. The TriG is removed once loaded."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    trig = directory / "records.trig"
    began = time.perf_counter()
    info = generate(trig)
    info["generate_s"] = round(time.perf_counter() - began, 1)
    began = time.perf_counter()
    store = ox.Store(str(directory / "store"))
    store.bulk_load(path=str(trig), format=ox.RdfFormat.TRIG)
    store.optimize()
    info["quads"] = len(store)
    store.flush()
    del store
    info["load_s"] = round(time.perf_counter() - began, 1)
    trig.unlink()
    return info


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> Load:
    """The load average (1, 5, 15 min); NaN where the system has none."""
    try:
        return os.getloadavg()
    except OSError:
        return (math.nan, math.nan, math.nan)


def head(title: str, produced_by: str) -> list[str]:
    """A results file's first lines: its title, the command that wrote it, and when and on what
    it ran."""
    return [
        f"# {title}",
        "",
        f"Produced by `{produced_by}`; see `benchmarks/README.md`.",
        "",
        f"- date: {utc_now()}",
        f"- machine: {os.cpu_count()} CPUs ({_cpu_model()}), {platform.system()} "
        f"{platform.machine()}",
        f"- python {platform.python_version()}, pyoxigraph {ox.__version__}",
    ]


def load_line(before: Load, after: Load | None = None) -> str:
    """The 1-minute load average around the measurement (the benchmark itself adds about 1)."""
    after = load_average() if after is None else after
    return f"- load average: {before[0]:.2f} before, {after[0]:.2f} after"


def write(out: Path, text: str,
          log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
          ) -> str:
    """Write a results file (its folder made as needed) and say so; the text, for printing."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    log(f"wrote {out}")
    return text
