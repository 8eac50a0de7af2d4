"""Shared machinery of the NOS models: a small token grammar, CLI sessions with a
mode stack, running/startup/pending configuration stores and persistence.

A model holds the switch-wide state (configuration stores and NOS extras such as
EOS sessions or NX-OS checkpoints) as plain JSON-serialisable dicts; a
:class:`Session` holds one CLI user's mode stack.  ``model.handle(line)`` drives a
default session so a model can be used without SSH.

Grammar rules are written as strings::

    "interface ethernet <ports:ports> mtu <mtu:int:1500-9216> [force]"

``word`` is a keyword (abbreviable to a unique-enough prefix where the NOS allows
it), ``[word]`` an optional keyword, ``<name:kind[:arg]>`` a parameter.  Kinds:
``int:lo-hi``, ``ints:lo-hi`` (``3,4`` or ``0-25,27``), ``intlist:lo-hi`` (one or
more space-separated ints, greedy), ``word``, ``choice:a|b|c``, ``ports`` (the
NOS's own port-range syntax), ``rest`` (the remainder of the line).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

# ---------------------------------------------------------------------------
# grammar


@dataclass
class Tok:
    kind: str  # 'lit' or a parameter kind
    word: str = ""
    name: str = ""
    arg: str = ""
    optional: bool = False


@dataclass
class Rule:
    modes: frozenset
    toks: list
    handler: Callable
    text: str


@dataclass
class Failure:
    pos: int  # index of the word where matching failed
    reason: str  # 'invalid' | 'incomplete' | 'range'
    info: Any = None


def compile_pattern(text: str) -> list[Tok]:
    toks = []
    for part in text.split():
        if part.startswith("<") and part.endswith(">"):
            bits = part[1:-1].split(":", 2)
            toks.append(Tok(kind=bits[1], name=bits[0], arg=bits[2] if len(bits) > 2 else ""))
        elif part.startswith("[") and part.endswith("]"):
            toks.append(Tok(kind="lit", word=part[1:-1], optional=True))
        else:
            toks.append(Tok(kind="lit", word=part))
    return toks


MAX_PORT = 4096  # larger than any front-panel port number


def parse_int_set(text: str, lo: int, hi: int) -> list[int] | None:
    """'3', '3,4', '0-25,27-47' -> sorted ints, or None when malformed/out of range."""
    out: set[int] = set()
    for piece in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if not m:
            return None
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        if a > b or a < lo or b > hi:
            return None
        out.update(range(a, b + 1))
    return sorted(out)


def compress_ints(values) -> str:
    """[0,1,2,5] -> '0-2,5'."""
    vals = sorted(set(values))
    runs = []
    for v in vals:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _lo_hi(arg: str) -> tuple[int, int]:
    lo, hi = arg.split("-")
    return int(lo), int(hi)


# ---------------------------------------------------------------------------
# sessions


class CliError(Exception):
    """Raised by a handler to reject a syntactically valid command."""

    def __init__(self, message: str, pos: int | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos


@dataclass
class Frame:
    mode: str
    ctx: dict = field(default_factory=dict)


class Session:
    """One CLI user: a mode stack plus per-session flags."""

    def __init__(self, model: "SwitchModel"):
        self.model = model
        self.stack: list[Frame] = [Frame(model.initial_mode)]
        self.txn: str | None = None  # name of an open configuration session
        self.pending_prompt: Callable | None = None  # answer handler of a y/N question
        self.closed = False
        self.flags: dict = {}

    @property
    def mode(self) -> str:
        return self.stack[-1].mode

    @property
    def ctx(self) -> dict:
        return self.stack[-1].ctx

    def push(self, mode: str, **ctx):
        self.stack.append(Frame(mode, ctx))

    def pop_to(self, depth: int):
        del self.stack[depth:]

    def prompt(self) -> str:
        return self.model.prompt(self)

    def handle(self, line: str) -> str:
        return self.model.execute(self, line)


# ---------------------------------------------------------------------------
# models


class SwitchModel:
    """Base of the NOS models.  Subclasses define ``nos``, ``device_type``,
    ``initial_mode``, ``default_ports()``, ``factory_config()``, the grammar
    (``build_rules``), ``prompt``, ``error``, the renderers and ``port_view``."""

    nos = "base"
    device_type = ""
    initial_mode = "exec"
    abbreviate = True
    config_modes: frozenset = frozenset()
    feature_fault_re = re.compile(r"\becn\b|congestion-control|random-detect", re.I)

    def __init__(self, name: str = "leaf1", ports: list[str] | None = None):
        self.name = name
        self.ports = [self.canon_port(p) for p in ports] if ports else self.default_ports()
        self.running = self.factory_config()
        self.startup = copy.deepcopy(self.running)
        self.extra: dict = self.factory_extra()
        self.counters: dict = {}
        self.rules: list[Rule] = []
        self.build_rules()
        self._default_session: Session | None = None

    # -- LLDP (layer 9's cabling check) -------------------------------------
    # The show command of the NOS's LLDP table, answered from the rack's
    # cables as they are (simlab/fabric/cables.py: the server sets
    # ``lldp_source``); ``render_lldp`` prints it as the NOS does.
    lldp_command = ""
    lldp_source = None
    lldp_sysdescr = "Debian GNU/Linux 12 (bookworm) Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC x86_64"

    def lldp_port(self, port: str) -> tuple[str, str, str]:
        """What the NOS's LLDP agent sends about ``port``: (port ID subtype as
        lldpd names it, port ID, port description or '')."""
        return ("ifname", port, "")

    def render_lldp(self, neighbors: list[dict]) -> str:
        raise CliError("LLDP is not modelled on this NOS")

    # -- to be provided by subclasses -------------------------------------
    def default_ports(self) -> list[str]:
        raise NotImplementedError

    def factory_config(self) -> dict:
        raise NotImplementedError

    def factory_extra(self) -> dict:
        return {}

    def build_rules(self):
        raise NotImplementedError

    def prompt(self, s: Session) -> str:
        raise NotImplementedError

    def error(self, s: Session, line: str, fail: Failure) -> str:
        raise NotImplementedError

    def canon_port(self, text: str) -> str:
        raise NotImplementedError

    def expand_ports(self, text: str) -> list[str] | None:
        raise NotImplementedError

    def port_view(self, port: str) -> dict:
        raise NotImplementedError

    def fault_pfc_off(self, ports: list[str]):
        raise NotImplementedError

    def fault_mtu_low(self, ports: list[str], mtu: int):
        raise NotImplementedError

    def fault_watchdog_off(self, ports: list[str]):
        """The PFC watchdog off on ``ports`` (its configuration removed)."""
        raise ValueError(f"the {self.nos} twin keeps no PFC watchdog")

    def fault_global_pfc_off(self):
        """PFC off switch-wide, the ports' own PFC settings kept."""
        raise ValueError(f"{self.nos} has no switch-wide PFC state apart from the ports'")

    # -- grammar -----------------------------------------------------------
    def rule(self, modes, *patterns):
        """Decorator-free registration: ``self.rule(('config',), 'a b', ...)(fn)``."""
        modes = frozenset([modes] if isinstance(modes, str) else modes)

        def reg(fn):
            for p in patterns:
                self.rules.append(Rule(modes, compile_pattern(p), fn, p))
            return fn

        return reg

    def add(self, modes, pattern: str, fn: Callable):
        modes = frozenset([modes] if isinstance(modes, str) else modes)
        self.rules.append(Rule(modes, compile_pattern(pattern), fn, pattern))

    def _lit_ok(self, word: str, lit: str) -> bool:
        w = word.lower()
        lit = lit.lower()
        if w == lit:
            return True
        return self.abbreviate and len(w) >= 2 and lit.startswith(w)

    def _param(self, t: Tok, words: list[str], wi: int):
        """-> (value, next_wi) or Failure."""
        w = words[wi]
        k = t.kind
        if k == "word":
            return w, wi + 1
        if k == "rest":
            return " ".join(words[wi:]), len(words)
        if k == "int":
            if not re.fullmatch(r"-?\d+", w):
                return Failure(wi, "invalid")
            lo, hi = _lo_hi(t.arg)
            v = int(w)
            if not lo <= v <= hi:
                return Failure(wi, "range", (lo, hi))
            return v, wi + 1
        if k == "ints":
            lo, hi = _lo_hi(t.arg)
            v = parse_int_set(w, lo, hi)
            if v is None:
                if re.fullmatch(r"[\d,-]+", w):
                    return Failure(wi, "range", (lo, hi))
                return Failure(wi, "invalid")
            return v, wi + 1
        if k == "intlist":
            lo, hi = _lo_hi(t.arg)
            vals = []
            j = wi
            while j < len(words) and re.fullmatch(r"\d+", words[j]):
                v = int(words[j])
                if not lo <= v <= hi:
                    return Failure(j, "range", (lo, hi))
                vals.append(v)
                j += 1
            if not vals:
                return Failure(wi, "invalid")
            return vals, j
        if k == "choice":
            for c in t.arg.split("|"):
                if w.lower() == c.lower():
                    return c, wi + 1
            for c in t.arg.split("|"):
                if self._lit_ok(w, c):
                    return c, wi + 1
            return Failure(wi, "invalid")
        if k == "ports":
            v = self.expand_ports(w)
            if not v:
                return Failure(wi, "invalid")
            return v, wi + 1
        raise ValueError(f"unknown token kind {k}")

    def _match(self, toks, ti, words, wi, args):
        if ti == len(toks):
            if wi == len(words):
                return args
            return Failure(wi, "invalid")
        t = toks[ti]
        if wi == len(words):
            if all(x.optional for x in toks[ti:]):
                return args
            return Failure(wi, "incomplete")
        if t.kind == "lit":
            r = None
            if self._lit_ok(words[wi], t.word):
                a = args
                if t.optional:
                    a = dict(args)
                    a[t.word.replace("-", "_")] = True
                r = self._match(toks, ti + 1, words, wi + 1, a)
                if not isinstance(r, Failure):
                    return r
            if t.optional:
                r2 = self._match(toks, ti + 1, words, wi, args)
                if not isinstance(r2, Failure) or r is None:
                    return r2
                return max(r, r2, key=lambda f: f.pos)
            return r if r is not None else Failure(wi, "invalid")
        got = self._param(t, words, wi)
        if isinstance(got, Failure):
            return got
        val, nwi = got
        a = dict(args)
        a[t.name] = val
        return self._match(toks, ti + 1, words, nwi, a)

    def match_rules(self, mode: str, words: list[str]):
        """-> (rule, args) or Failure (the deepest one)."""
        best = Failure(0, "invalid")
        for r in self.rules:
            if mode not in r.modes:
                continue
            got = self._match(r.toks, 0, words, 0, {})
            if isinstance(got, Failure):
                if got.pos > best.pos or (got.pos == best.pos and best.reason == "invalid"
                                          and got.reason != "invalid"):
                    best = got
                continue
            for t in r.toks:
                if t.optional and t.kind == "lit":
                    got.setdefault(t.word.replace("-", "_"), False)
            return r, got
        return best

    # -- execution ---------------------------------------------------------
    def session(self) -> Session:
        return Session(self)

    def handle(self, line: str) -> str:
        """Run one line in the model's default session."""
        if self._default_session is None:
            self._default_session = self.session()
        return self._default_session.handle(line)

    @property
    def default_session(self) -> Session:
        if self._default_session is None:
            self._default_session = self.session()
        return self._default_session

    # Linux-based NOSes (Cumulus NVUE, community SONiC): what their bash
    # answers besides the NOS's own commands.
    uname = "Linux"

    def linux_shell(self, s, w):
        """``exit`` (leaves the root shell, or the session), ``sudo -s``/``-i``
        (asks the login password, then a root shell), ``uname -a``,
        ``hostname``; None for any other command."""
        if w[0] == "exit":
            if s.mode == "root":
                s.stack.pop()
            else:
                s.closed = True
            return ""
        if w[:2] in (["sudo", "-s"], ["sudo", "-i"]):
            if s.mode == "root":
                return ""

            def answer(pw):
                if s.flags.get("password") not in (None, pw):
                    return "Sorry, try again."
                s.push("root")
                return ""
            s.pending_prompt = answer
            s.flags["no_newline_prompt"] = True
            return f"[sudo] password for {self.user}: "
        if w[0] == "uname":
            return self.uname.format(name=self.name)
        if w[0] == "hostname":
            return self.name
        return None

    def split_pipe(self, line: str) -> tuple[str, list[str]]:
        parts = [p.strip() for p in line.split(" | ")]
        return parts[0], parts[1:]

    def apply_filters(self, out: str, filters: list[str]) -> str:
        for f in filters:
            m = re.match(r"(\S+)\s*(.*)$", f)
            verb, arg = (m.group(1), m.group(2)) if m else (f, "")
            lines = out.split("\n")
            if verb in ("include", "inc", "i", "grep"):
                lines = [x for x in lines if re.search(arg, x)]
            elif verb in ("exclude", "exc", "e"):
                lines = [x for x in lines if not re.search(arg, x)]
            elif verb in ("begin", "b"):
                for i, x in enumerate(lines):
                    if re.search(arg, x):
                        lines = lines[i:]
                        break
                else:
                    lines = []
            elif verb in ("section", "sec"):
                keep, inblock = [], False
                for x in lines:
                    top = bool(x) and not x[0].isspace()
                    if top:
                        inblock = bool(re.search(arg, x))
                        if inblock:
                            keep.append(x)
                    elif inblock or re.search(arg, x):
                        keep.append(x)
                lines = keep
            elif verb in ("no-more", "json", "json-print"):
                pass
            else:
                return "% Invalid input"
            out = "\n".join(lines)
        return out

    def is_config_line(self, s: Session, line: str) -> bool:
        w = line.strip().split()
        if not w or s.mode not in self.config_modes:
            return False
        return w[0] not in ("exit", "end", "show", "do", "abort", "commit")

    def parent_modes(self, s: Session):
        """Frames to try when a command fails in the current mode: the current
        one first, then its ancestors (commands of an enclosing mode exit the
        sub-mode, as on the real CLIs)."""
        idx = len(s.stack) - 1
        while idx >= 0:
            yield idx
            if s.stack[idx].mode not in self.config_modes:
                break
            idx -= 1

    # A line starting with this is a comment the CLI ignores ('#' in the shell
    # of the Linux-based NOSes).
    comment = "!"

    def execute(self, s: Session, line: str) -> str:
        """Run one line: the answer to a pending question (a password, [y/N]),
        nothing for a blank line or a comment, else ``run_line``."""
        if s.pending_prompt is not None:
            fn, s.pending_prompt = s.pending_prompt, None
            return fn(line.strip()) or ""
        raw = line.strip()
        if not raw or raw.startswith(self.comment):
            return ""
        if self.lldp_command and re.sub(r"^(sudo|do)\s+", "", raw) == self.lldp_command:
            return self.render_lldp(self.lldp_source() if self.lldp_source else [])
        return self.run_line(s, raw)

    def run_line(self, s: Session, raw: str) -> str:
        """A non-blank line through the grammar of the session's mode (and of
        the modes enclosing it)."""
        cmd, filters = self.split_pipe(raw)
        words = cmd.split()
        best = None
        for depth in self.parent_modes(s):
            got = self.match_rules(s.stack[depth].mode, words)
            if isinstance(got, Failure):
                if best is None or got.pos > best.pos:
                    best = got
                continue
            rule, args = got
            saved = s.stack[:]
            if depth != len(s.stack) - 1:
                s.pop_to(depth + 1)
            try:
                out = rule.handler(s, **args)
            except CliError as e:
                s.stack = saved
                return self.reject(s, raw, e)
            out = out or ""
            if filters:
                out = self.apply_filters(out, filters)
            return out
        return self.error(s, raw, best)

    def reject(self, s: Session, line: str, e: CliError) -> str:
        return e.message

    # -- configuration stores ---------------------------------------------
    def cfg(self, s: Session | None = None) -> dict:
        """The store that configuration commands of this session write to."""
        if s is not None and s.txn is not None:
            return self.extra["sessions"][s.txn]
        return self.running

    def port_cfg(self, cfg: dict, port: str) -> dict:
        return cfg.setdefault("ports", {}).setdefault(port, {})

    def prune(self, cfg: dict):
        ports = cfg.get("ports", {})
        for p in [p for p, v in ports.items() if not v]:
            del ports[p]

    def check_ports(self, ports: list[str]):
        bad = [p for p in ports if p not in self.ports]
        if bad:
            raise CliError(self.no_such_port(bad[0]))

    def no_such_port(self, port: str) -> str:
        return f"% Interface {port} does not exist"

    # -- persistence -------------------------------------------------------
    def to_state(self) -> dict:
        return {
            "nos": self.nos,
            "name": self.name,
            "ports": self.ports,
            "running": self.running,
            "startup": self.startup,
            "extra": self.extra,
            "counters": self.counters,
        }

    def load_state(self, st: dict):
        self.name = st.get("name", self.name)
        self.ports = st.get("ports", self.ports)
        self.running = st["running"]
        self.startup = st["startup"]
        self.extra = st.get("extra", self.factory_extra())
        self.counters = st.get("counters", {})

    def state_json(self) -> str:
        return json.dumps(self.to_state(), sort_keys=True, indent=1)

    def reboot(self):
        """Power cycle: running configuration becomes the startup configuration."""
        self.running = copy.deepcopy(self.startup)

    def port_counters(self, port: str) -> dict:
        base = {"rx_pfc_pause": 0, "tx_pfc_pause": 0, "ecn_marked": 0, "cnp_sent": 0,
                "rx_packets": 0, "tx_packets": 0, "discards": 0}
        base.update(self.counters.get(port, {}))
        return base


def default_dscp_map() -> dict[int, int]:
    """The DSCP>>3 mapping the NOSes use for L3 trust by default."""
    return {d: d >> 3 for d in range(64)}
