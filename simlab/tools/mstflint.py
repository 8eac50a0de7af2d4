"""Twin of ``mstflint`` / ``flint``: ``-d <dev> q|query [full]``.

Prints the burned image's FW version, the running one as ``FW
Version(Running)`` when they differ (a new image was burned and the card
was not reset since), PSID and the base GUID/MAC of the card.  A device that
cannot be opened gives flint's ``-E- Cannot open Device`` line and exit 1.
"""

from __future__ import annotations

import sys

from simlab.tools import formats
from simlab.tools.agentclient import summary
from simlab.tools.twin import pf_by_device

FAILED = 1

ROM_INFO = {
    "cx5ex": [{"type": "UEFI", "version": "14.29.14", "cpu": "AMD64"},
              {"type": "PXE", "version": "3.6.902", "cpu": "AMD64"}],
    "cx6dx": [{"type": "UEFI", "version": "14.32.17", "cpu": "AMD64,AARCH64"},
              {"type": "PXE", "version": "3.7.300", "cpu": "AMD64"}],
    "cx7": [{"type": "UEFI", "version": "14.32.17", "cpu": "AMD64,AARCH64"},
            {"type": "PXE", "version": "3.7.300", "cpu": "AMD64"}],
    "cx8": [{"type": "UEFI", "version": "14.38.16", "cpu": "AMD64,AARCH64"},
            {"type": "PXE", "version": "3.8.100", "cpu": "AMD64"}],
}
RELEASE_DATES = {"16.35.2000": "6.12.2022", "22.39.1002": "13.9.2023", "28.39.1002": "13.9.2023",
                 "40.44.1036": "19.2.2025"}


def query_fields(pf: dict) -> dict:
    fw = pf["firmware"]
    mac = pf["mac"].replace(":", "")
    return {
        "image_type": "FS4",
        "fw_version": fw["fw_version"],
        "fw_version_running": fw.get("running_fw_version", fw["fw_version"]),
        "fw_release_date": RELEASE_DATES.get(fw["fw_version"], "N/A"),
        "product_version": fw["fw_version"],
        "rom_info": ROM_INFO.get(pf["model"], []),
        "base_guid": (mac[:6] + "0300" + mac[6:], 16),
        "base_mac": (mac, 16),
        "image_vsd": "N/A",
        "device_vsd": "N/A",
        "psid": pf["psid"],
        "security_attributes": "secure-fw",
    }


def main(argv: list[str], prog: str = "mstflint") -> int:
    device = None
    cmd = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-d", "--device"):
            if i + 1 >= len(argv):
                print('-E- Missing argument for flag "-d"')
                return FAILED
            device = argv[i + 1]
            i += 2
            continue
        if a in ("q", "query"):
            cmd = "query"
        elif a in ("-h", "--help"):
            print(f"    {prog} -d <device> q")
            return 0
        elif a.startswith("-"):
            pass     # flags such as --no_fw_ctrl / -qq do not change a query
        elif cmd is None:
            print(f'-E- Unknown Subcommand: "{a}"')
            return FAILED
        i += 1
    if cmd is None:
        print("-E- No command found.")
        return FAILED
    if device is None:
        print("-E- Missing device or image argument")
        return FAILED
    s = summary(prog)
    pf = pf_by_device(s, device, allow_mst=(prog == "flint"))
    if pf is None:
        print(f"-E- Cannot open Device: {device}. No such file or directory MFE_CR_ERROR")
        return FAILED
    sys.stdout.write(formats.mstflint_query(query_fields(pf)))
    return 0
