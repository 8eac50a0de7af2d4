"""The tool twins' fork server: one process per node that has imported every
tool twin once and forks a child for each call.

A real tool is a native binary that starts in a millisecond; a tool twin
started as its own interpreter spends most of a call importing (20-50 ms of
CPU, against 8 ms for the interpreter alone). Through this server a call
costs the interpreter of a small client, one fork and the tool's own work.

The wrapper in /usr/local/sbin runs ``CLIENT`` (``python3 -S -c``): it
connects to the server's SOCK_SEQPACKET socket and sends, in one message, its
working directory, its arguments and its environment, with its standard
input, output and error as file descriptors (SCM_RIGHTS). The server forks;
the child puts those descriptors on 0, 1 and 2, takes the caller's directory
and environment, runs the tool twin's ``main()`` and sends back its exit
status, which the client exits with. So the tool writes to the caller's own
pipes, as a program the caller started would.

Where no server answers (not started yet, or gone), the client becomes the
tool twin itself: it execs the interpreter on the tool twins' entry point,
the way every call ran before this server existed. Calls whose ``SIMLAB_*``
settings differ from the server's go that way too (the twins read those at
import). A client that goes away while its tool runs (killed, or its
``timeout`` ran out) takes the tool with it (``wait_tool``): the collection's
perftest round stops an ib_write_bw server by the session and command line
of the process it started, which is the client. The NCCL launcher and test
keep a process of their own: see simlab.node.agent.DIRECT_TOOLS.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import traceback

# the entry point of a tool twin run as its own interpreter (python3 -S -c)
ENTRY = "import sys; from simlab.tools.__main__ import main; sys.exit(main())"

# the request: NUL-separated fields, cwd, then the number of arguments, the
# arguments (the tool's name first), then KEY=VALUE for the environment
MAX_REQUEST = 1 << 20


def client(sock_path: str) -> str:
    """The client's code, for ``python3 -S -c`` in a shell wrapper (so no
    single quote in it). It imports only built-in modules (posix, _socket):
    the interpreter's start is most of its cost."""
    return f"""import posix, sys, _socket
enc = lambda a: a.encode("utf-8", "surrogateescape")
s = _socket.socket(1, 5)
try:
    s.connect("{sock_path}")
    s.sendmsg([b"\\0".join([posix.getcwdb(), str(len(sys.argv) - 1).encode()] + [enc(a) for a in sys.argv[1:]]
                           + [k + b"=" + v for k, v in posix.environ.items()])],
               [(1, 1, b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2)))])
except OSError:
    s.close()
    posix.execv(sys.executable, [sys.executable, "-S", "-c", "{ENTRY}"] + sys.argv[1:])
r = s.recv(4)
if len(r) != 4:
    posix.write(2, b"simlab: the tool twin ended without an exit status\\n")
    sys.exit(1)
sys.exit(int.from_bytes(r, "little", signed=True))
"""


def decode_request(msg: bytes) -> tuple[bytes, list[str], dict[str, str]]:
    """(cwd, argv, environment) from a client's message; ValueError if it is
    not one."""
    parts = msg.split(b"\0")
    if len(parts) < 3:
        raise ValueError("short request")
    argc = int(parts[1])
    if argc < 1 or len(parts) < 2 + argc:
        raise ValueError("bad argument count")
    argv = [os.fsdecode(p) for p in parts[2:2 + argc]]
    env = {}
    for item in parts[2 + argc:]:
        key, sep, value = item.partition(b"=")
        if sep:
            env[os.fsdecode(key)] = os.fsdecode(value)
    return parts[0], argv, env


def own_settings(env: dict) -> bool:
    """Whether a caller's SIMLAB_* settings are the server's (the tool twins
    read them when imported, which the server did once)."""
    mine = {k: v for k, v in os.environ.items() if k.startswith("SIMLAB_")}
    return mine == {k: v for k, v in env.items() if k.startswith("SIMLAB_")}


def exit_status(exc: SystemExit) -> int:
    """The status an interpreter exits with on ``SystemExit``: the code, 0
    for None, else 1 after printing it (as Python's own handler does)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def run_call(conn: socket.socket, msg: bytes, fds: list[int]) -> None:
    """In the server's forked child: run the call in a child of its own and
    report its exit status on ``conn`` (128+N when killed by signal N). The
    tool may exec a real binary (the ip, modprobe, modinfo and sysctl twins
    hand what they do not model to the real tool): its status is reported
    all the same. Never returns."""
    rc = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        cwd, argv, env = decode_request(msg)
        pid = os.fork()
        if pid == 0:
            conn.close()
            run_tool(cwd, argv, env, fds)
        for fd in fds:
            os.close(fd)
        rc = wait_tool(pid, conn)
    except (OSError, ValueError):
        pass
    finally:
        try:
            conn.send(int(rc).to_bytes(4, "little", signed=True))
        except (OSError, OverflowError):
            pass
        os._exit(0)


def wait_tool(pid: int, conn: socket.socket, grace_s: float = 5.0) -> int:
    """The exit status of the call's tool (128+N when killed by signal N).
    A caller that goes away first (killed, or its ``timeout`` ran out) takes
    its tool with it, as a signal to a tool run as the caller's own child
    would: the client sends nothing after its request, so its socket turning
    readable means it closed; the tool gets SIGTERM, and SIGKILL after
    ``grace_s``. Waits on a pidfd, so a tool that ends is seen at once."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):   # no pidfd here: wait as a plain parent
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            poller.register(conn.fileno(), select.POLLIN | select.POLLHUP)
            while True:
                ready = dict(poller.poll())
                if pidfd in ready:
                    break
                if conn.fileno() in ready:
                    os.kill(pid, signal.SIGTERM)
                    poller.unregister(conn.fileno())
                    if not poller.poll(grace_s * 1000):
                        os.kill(pid, signal.SIGKILL)
                    break
        finally:
            os.close(pidfd)
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return 128 - rc if rc < 0 else rc


def run_tool(cwd: bytes, argv: list[str], env: dict, fds: list[int]) -> None:
    """Become the caller's tool twin: its descriptors on 0, 1 and 2, its
    directory and environment, then the entry point's ``main()``; exit with
    its status as the interpreter would. Never returns."""
    rc = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(cwd)
        if not own_settings(env):
            os.execve(sys.executable, [sys.executable, "-S", "-c", ENTRY] + argv, env)
        os.environ.clear()
        os.environ.update(env)
        sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
        sys.argv = ["-c"] + argv
        from simlab.tools.__main__ import main
        try:
            rc = int(main() or 0)
        except SystemExit as exc:
            rc = exit_status(exc)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
    except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
        sys.stderr.flush()
        rc = 1
    finally:
        os._exit(rc & 0xFF)


def preload() -> None:
    """Import every tool twin (and what they import), once."""
    import importlib
    from simlab.tools import __main__ as entry
    for name in sorted(set(entry.MODULES.values())):
        importlib.import_module(name)


def warm(msg: bytes) -> None:
    """Before forking a call: the ``warm()`` of its tool twin's module, when it
    has one (the perftest twin parses the rack's files there, so each call
    inherits them). Whatever goes wrong is left to the call."""
    try:
        from simlab.tools import __main__ as entry
        tool = os.fsdecode(msg.split(b"\0", 3)[2])
        hook = getattr(sys.modules.get(entry.MODULES.get(tool, "")), "warm", None)
        if hook is not None:
            hook()
    except Exception:  # pylint: disable=broad-except
        pass


def serve(sock_path: str, parent: int | None = None, poll_s: float = 2.0) -> None:
    """Answer calls on ``sock_path`` until ``parent`` (a pid) is gone."""
    preload()
    try:
        os.unlink(sock_path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(sock_path)
    srv.listen(128)
    srv.settimeout(poll_s)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped by the kernel
    while parent is None or os.getppid() == parent:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        fds: list[int] = []
        try:
            conn.settimeout(poll_s)
            msg, fds, _flags, _addr = socket.recv_fds(conn, MAX_REQUEST, 3)
            if len(fds) == 3 and msg:
                warm(msg)
                if os.fork() == 0:
                    srv.close()
                    run_call(conn, msg, fds)
        except OSError:
            pass
        finally:
            for fd in fds:
                os.close(fd)
            conn.close()
    srv.close()


def main(argv: list[str]) -> int:
    """``python3 -S -m simlab.tools.forkserver SOCKET [PARENT_PID]``"""
    serve(argv[0], int(argv[1]) if len(argv) > 1 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
