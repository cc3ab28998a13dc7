"""How an indexer is faring: when it last reached its database, when it last claimed a job,
and how many of its tries failed in a row. `/metrics` reports it; `archivist worker` exits
(for its supervisor to restart it) once the database has been out of reach too long."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class IndexerHealth:
    """Updated by the indexer's loops; read by metrics and the worker's watch."""

    started: float = field(default_factory=time.time)
    last_ok: float | None = None
    """When a claim, lease renewal or finished job last reached the database (Unix time)."""
    last_claim: float | None = None
    """When a job was last claimed."""
    errors: int = 0
    """Failures in a row of those tries (0 after any success)."""

    def ok(self, claimed: bool = False) -> None:
        now = time.time()
        self.last_ok, self.errors = now, 0
        if claimed:
            self.last_claim = now

    def failed(self) -> None:
        self.errors += 1

    def out_of_reach_for(self) -> float:
        """Seconds the database has been out of reach (0 while the last try succeeded)."""
        if self.errors == 0:
            return 0.0
        return time.time() - (self.last_ok if self.last_ok is not None else self.started)
