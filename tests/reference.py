"""Where the tests find ../shared: the real published outputs (each file a
header, a '# ---' line, then the output as published) and the upstream CRD
schemas.  GPUFABRIC_SHARED points elsewhere when shared/ is not beside the
checkout."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUFABRIC_SHARED", REPO.parent / "shared"))
REAL_OUTPUTS = SHARED / "reference" / "real-outputs"
CRDS = SHARED / "schemas" / "crds"
# DMTF DSP8010 (Redfish schemas, CSDL), as DMTF's Service Validator reads them
REDFISH_CSDL = SHARED / "schemas" / "redfish" / "csdl"


def read_real_output(relpath: str) -> str:
    """Body of a real-outputs file: everything after the '# ---' header line."""
    text = (REAL_OUTPUTS / relpath).read_bytes().decode("utf-8")
    head, sep, body = text.partition("# ---")
    assert sep, f"{relpath}: no '# ---' header"
    return body[1:] if body.startswith("\n") else body.lstrip("\r\n")
