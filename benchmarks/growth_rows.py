"""One row of the growth table: a step measured at one size."""

from dataclasses import dataclass


@dataclass(frozen=True)
class GrowthRow:
    """A step at one size; ratios to the smaller size are computed when the table is written."""

    axis: str  # "facts" or "sessions"
    size: int
    step: str  # "load", "label index", "grounding", "saved query most_cited_documents", ...
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    seconds: float | None = None  # one-off steps (load, index, migrate)
    peak_mb: float | None = None
    note: str = ""
