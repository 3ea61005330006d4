"""A small disk of its own for tests of what a full disk does: a tmpfs mounted for the test."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FULL_DISK_FILL = 64 * 1024


@pytest.fixture
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """An empty filesystem of 8 MiB, or of the size the test gives it (`indirect`
    parametrization, e.g. "16m"); skipped where this process may not mount one (not root)."""
    size = getattr(request, "param", "8m")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def fill_disk() -> Callable[[Path], None]:
    """Writes zeros into a file on the disk until no byte more fits."""

    def fill(disk: Path) -> None:
        with (disk / "ballast").open("wb") as ballast:
            try:
                while True:
                    ballast.write(bytes(FULL_DISK_FILL))
                    ballast.flush()
            except OSError:
                pass

    return fill
