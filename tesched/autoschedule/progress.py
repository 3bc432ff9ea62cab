"""Progress of a tuning run: a ``tqdm`` bar when tqdm is installed (``pip install tesched[tune]``), a plain
status line on stderr otherwise, or nothing. It only reports; it never changes the search."""
from __future__ import annotations

import sys
from typing import Any


class Progress:
    """``update(best_seconds)`` after each trial; ``close()`` at the end."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.count = total, label, 0
        self._bar: Any = None
        self._plain = False
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self._plain = True
            return
        self._bar = tqdm(total=total, desc=label, unit="trial", leave=True)

    def update(self, best_seconds: float | None) -> None:
        self.count += 1
        best = "-" if best_seconds is None else f"{best_seconds * 1e3:.3f} ms"
        if self._bar is not None:
            self._bar.set_postfix_str(f"best {best}", refresh=False)
            self._bar.update(1)
        elif self._plain:
            print(f"\r{self.label}: {self.count}/{self.total} trials, best {best}", end="", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._plain:
            print(file=sys.stderr)
