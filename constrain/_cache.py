"""Small on-disk cache for derived tables (Unicode class ranges, ...), written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("CONSTRAIN_CACHE") or Path.home() / ".cache" / "constrain")


def load_json(kind: str, key: str):
    path = cache_root() / kind / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def save_json(kind: str, key: str, value) -> None:
    folder = cache_root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass  # a read-only home only costs recomputation
