"""No committed file is a byte copy of another: one copy, read from where its source is
recorded (empty files aside, and a vendored tree's own LICENSE, which travels with it)."""
from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def _allowed(path: str) -> bool:
    parts = path.split("/")
    return parts[:2] == ["tests", "vendor"] and parts[-1] == "LICENSE" and len(parts) == 4


def test_no_committed_file_is_a_byte_copy_of_another():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    by_blob = defaultdict(list)
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        blob = meta.split()[1]
        if blob != EMPTY_BLOB and not _allowed(path):
            by_blob[blob].append(path)
    copies = [paths for paths in by_blob.values() if len(paths) > 1]
    assert not copies, f"byte copies: {copies}"
