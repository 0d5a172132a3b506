"""Run records: JSON-lines metric logs and frozen configs with their hash and git revision.

Plots read these files only (they never retrain).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

from jaxfl import checkpoint
from jaxfl.accounting.report import jsonable  # the one JSON converter


def to_json(x) -> str:
    return json.dumps(jsonable(x), sort_keys=True)


class JsonlWriter:
    """Appends one JSON object per line; ``truncate_after(r)`` drops records of later rounds."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict) -> dict:
        """Appends ``record``; returns it as :meth:`read` will return it (:func:`as_logged`),
        so a caller can keep the log in memory instead of reading the file back."""
        text = to_json(record)
        with self.path.open("a") as f:
            f.write(text + "\n")
            f.flush()
        return json.loads(text)

    def read(self) -> list[dict]:
        return read_jsonl(self.path)

    def truncate_after(self, round_index: int, records: list[dict] | None = None
                       ) -> list[dict]:
        """Keeps only records with ``round <= round_index`` (used when resuming); returns them.

        ``records``: the file's records when the caller has already read them (the file is
        then not read again)."""
        if records is None:
            if not self.path.exists():
                return []
            records = read_jsonl(self.path)
        keep = [r for r in records if r.get("round", -1) <= round_index]
        if self.path.exists():
            checkpoint.atomic_write_text(self.path, "".join(to_json(r) + "\n" for r in keep))
        return keep


def as_logged(record: dict) -> dict:
    """``record`` exactly as a JSON-lines log holds it and :func:`read_jsonl` returns it (JSON
    types, keys sorted)."""
    return json.loads(to_json(record))


def read_jsonl(path) -> list[dict]:
    """Reads a JSON-lines file, ignoring a torn last line left by a kill."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def git_revision(cwd=None) -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=5, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5,
                               check=False).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def config_hash(config) -> str:
    return hashlib.sha256(to_json(config).encode()).hexdigest()[:16]


def freeze_config(workdir, config) -> dict:
    """Writes ``config.json`` (config, its hash, git revision, jaxfl version) into ``workdir``."""
    import jaxfl

    record = {"config": jsonable(config), "config_hash": config_hash(config),
              "git_revision": git_revision(Path(__file__).parent),
              "jaxfl_version": jaxfl.__version__}
    if config is not None and dataclasses.is_dataclass(config):
        record["config_class"] = type(config).__module__ + "." + type(config).__qualname__
    checkpoint.atomic_write_text(Path(workdir) / "config.json",
                                 json.dumps(record, indent=2, sort_keys=True))
    return record
