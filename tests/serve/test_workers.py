"""The query worker pool of `tgsparql serve`."""

from __future__ import annotations

from pathlib import Path

from tgsparql.serve import ServerConfig
from tgsparql.serve.jobs import SavedJob
from tgsparql.serve.workers import Worker, WorkerPool
from tgsparql.stores.store import EmbeddedStore


def test_the_idle_worker_used_last_answers_the_next_request(tmp_path: Path) -> None:
    """One client's requests stay in one process, whose store caches hold what the last one
    read, instead of going round every worker in turn."""
    EmbeddedStore(tmp_path / "store").close()
    pool = WorkerPool(ServerConfig(store=tmp_path / "store", workers=2, page_workers=1))
    handed: list[Worker] = []
    get = pool._idle.get

    def recorded_get(*args: object, **kwargs: object) -> Worker:
        worker = get(*args, **kwargs)  # type: ignore[arg-type]
        handed.append(worker)
        return worker

    pool._idle.get = recorded_get  # type: ignore[method-assign]
    try:
        for _ in range(3):
            assert pool.run(SavedJob("sessions_per_day", {}, "csv")).status == 200
    finally:
        pool.close()
    assert len(handed) == 3 and handed[0] is handed[1] is handed[2]
