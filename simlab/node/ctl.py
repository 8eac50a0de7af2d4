"""``python3 -m simlab.node.ctl '<json request>'``: one request to the node
agent, from a shell inside the node (``simlab fault`` uses it through
``podman exec``).  Prints the JSON reply; exits 1 when it says not ok."""

import json
import sys

from .wire import request


def main() -> int:
    reply = request(json.loads(sys.argv[1]))
    print(json.dumps(reply))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
