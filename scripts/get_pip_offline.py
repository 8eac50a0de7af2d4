"""Stand-in for ansible-test's pip bootstrap script (get-pip.py), which
ansible-test downloads from a host the build machines cannot reach.  It does
what get-pip does with the arguments ansible-test passes: put pip into this
interpreter (from the stdlib's ensurepip) and install the requested packages
from the package index pip is configured with."""

import runpy
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"],
                      stdout=subprocess.DEVNULL)
# get-pip's own options: --no-setuptools / --no-wheel mean "do not add them".
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.argv = ["pip", "install", "--upgrade", *args]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
