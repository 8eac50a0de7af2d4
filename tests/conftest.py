"""Test set-up shared by every test: make the collection importable as
ansible_collections.gpufabric.stack (the Makefile links .build/ansible_collections/
gpufabric/stack to this checkout) and locate ../shared."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / ".build"
_link = BUILD / "ansible_collections" / "gpufabric" / "stack"
if not _link.exists():
    _link.parent.mkdir(parents=True, exist_ok=True)
    _link.symlink_to(Path("../../.."))
if str(BUILD) not in sys.path:
    sys.path.insert(0, str(BUILD))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("GPUFABRIC_SHARED", REPO.parent / "shared"))
REAL_OUTPUTS = SHARED / "reference" / "real-outputs"
CRDS = SHARED / "schemas" / "crds"


def read_real_output(relpath: str) -> str:
    """Body of a real-outputs file: everything after the '# ---' header line."""
    text = (REAL_OUTPUTS / relpath).read_bytes().decode("utf-8")
    head, sep, body = text.partition("# ---")
    assert sep, f"{relpath}: no '# ---' header"
    return body[1:] if body.startswith("\n") else body.lstrip("\r\n")


@pytest.fixture
def real_output():
    if not REAL_OUTPUTS.is_dir():
        pytest.skip(f"shared reference outputs not found at {REAL_OUTPUTS}")
    return read_real_output
