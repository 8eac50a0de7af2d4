"""What a lab node's Python compiles from zip archives (AnsiballZ payloads) is
kept by source (simlab/node/simlab_zipcache.py, in the twin's containers and the
VM nodes' image): the same source imported from a new archive is the code
compiling it gives, named after the new archive, without a second compile;
anything the cache cannot read or write is compiled as before."""

import marshal
import os
import subprocess
import sys
import traceback
import zipfile
import zipimport

import pytest

from simlab import containers
from simlab.node import simlab_zipcache as zipcache
from simlab.vm import image as vm_image

pytestmark = pytest.mark.tooling

SOURCE = b'''\
def outer():
    def inner():
        raise RuntimeError("from inside")
    return inner()

VALUE = [n * n for n in range(4)]
'''


class Counting:
    def __init__(self):
        self.calls = []

    def __call__(self, pathname, source):
        self.calls.append(pathname)
        return compile(source, pathname, "exec", dont_inherit=True)


def names(code):
    yield code.co_filename
    for c in code.co_consts:
        if isinstance(c, type(code)):
            yield from names(c)


def test_a_source_compiled_once_is_loaded_from_the_cache_named_after_the_new_archive(tmp_path):
    comp = Counting()
    first = zipcache.compile_source("/tmp/ansible_a/payload.zip/pkg/mod.py", SOURCE, str(tmp_path), comp)
    second = zipcache.compile_source("/tmp/ansible_b/payload.zip/pkg/mod.py", SOURCE, str(tmp_path), comp)
    assert comp.calls == ["/tmp/ansible_a/payload.zip/pkg/mod.py"]
    assert set(names(second)) == {"/tmp/ansible_b/payload.zip/pkg/mod.py"}
    expected = compile(SOURCE, "/tmp/ansible_b/payload.zip/pkg/mod.py", "exec", dont_inherit=True)
    assert second == expected
    assert first.co_code == second.co_code
    assert [str(p) for p in tmp_path.iterdir()] == [zipcache.entry(str(tmp_path), SOURCE)]


def test_another_source_is_another_entry(tmp_path):
    comp = Counting()
    zipcache.compile_source("/t/a.zip/pkg/mod.py", SOURCE, str(tmp_path), comp)
    zipcache.compile_source("/t/a.zip/pkg/mod.py", SOURCE + b"\nX = 1\n", str(tmp_path), comp)
    zipcache.compile_source("/t/b.zip/pkg/other.py", SOURCE, str(tmp_path), comp)
    assert len(comp.calls) == 2
    assert len(list(tmp_path.iterdir())) == 2


def test_a_damaged_entry_is_compiled_again_and_replaced(tmp_path):
    comp = Counting()
    entry = tmp_path / zipcache.entry(str(tmp_path), SOURCE)
    entry.write_bytes(b"\xe3\x00\x00")  # a code object's marshal tag, cut short
    code = zipcache.compile_source("/t/a.zip/m.py", SOURCE, str(tmp_path), comp)
    assert comp.calls == ["/t/a.zip/m.py"]
    assert marshal.loads(entry.read_bytes()) == code
    entry.write_bytes(marshal.dumps(("not", "code")))
    zipcache.compile_source("/t/b.zip/m.py", SOURCE, str(tmp_path), comp)
    assert len(comp.calls) == 2


def test_any_error_loading_an_entry_compiles_instead(tmp_path, monkeypatch):
    """A damaged entry can make marshal raise SystemError too, not only
    EOFError or ValueError: the import goes on all the same."""
    comp = Counting()
    zipcache.compile_source("/t/a.zip/m.py", SOURCE, str(tmp_path), comp)

    def damaged(data):
        raise SystemError("bad argument to internal function")
    monkeypatch.setattr(zipcache.marshal, "loads", damaged)
    code = zipcache.compile_source("/t/b.zip/m.py", SOURCE, str(tmp_path), comp)
    assert comp.calls == ["/t/a.zip/m.py", "/t/b.zip/m.py"]
    assert code == compile(SOURCE, "/t/b.zip/m.py", "exec", dont_inherit=True)


def test_an_error_writing_an_entry_leaves_no_file_and_the_import_be(tmp_path, monkeypatch):
    def cannot(code):
        raise ValueError("unmarshallable object")
    monkeypatch.setattr(zipcache.marshal, "dumps", cannot)
    code = zipcache.compile_source("/t/a.zip/m.py", SOURCE, str(tmp_path), Counting())
    assert code == compile(SOURCE, "/t/a.zip/m.py", "exec", dont_inherit=True)
    assert os.listdir(tmp_path) == []


def test_code_compiled_under_o_is_another_entry(tmp_path):
    """python -O drops asserts: what it compiled is not what a plain run
    would, so the optimisation level is part of the key."""
    probe = ("import sys; sys.path.insert(0, %r); import simlab_zipcache as z; print(z.entry('/c', b'x'))"
             % os.path.dirname(zipcache.__file__))
    plain, optimized = (subprocess.run([sys.executable, *flags, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout.strip() for flags in ([], ["-O"]))
    assert plain != optimized and os.path.dirname(plain) == "/c"


def test_a_cache_that_cannot_be_written_compiles_as_python_does(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    comp = Counting()
    code = zipcache.compile_source("/t/a.zip/m.py", SOURCE, str(blocked / "cache"), comp)
    assert code == compile(SOURCE, "/t/a.zip/m.py", "exec", dont_inherit=True)
    assert os.listdir(tmp_path) == ["file"]


def payload(path, name):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", b"")
        z.writestr(f"{name}/mod.py", SOURCE)


def test_zipimport_through_the_cache_imports_and_reports_the_archive_it_ran_from(tmp_path, monkeypatch):
    comp = Counting()
    cache = tmp_path / "cache"
    monkeypatch.setattr(zipimport, "_compile_source",
                        lambda p, s: zipcache.compile_source(p, s, str(cache), comp))
    seen = []
    for run in ("run1", "run2"):
        archive = tmp_path / run / "ansible_x_payload.zip"
        archive.parent.mkdir()
        payload(archive, "zcpkg")
        monkeypatch.syspath_prepend(str(archive))
        for name in ("zcpkg", "zcpkg.mod"):
            sys.modules.pop(name, None)
        import zcpkg.mod
        assert zcpkg.mod.VALUE == [0, 1, 4, 9]
        with pytest.raises(RuntimeError) as raised:
            zcpkg.mod.outer()
        seen.append(traceback.extract_tb(raised.value.__traceback__)[-1])
        sys.path.remove(str(archive))
    for name in ("zcpkg", "zcpkg.mod"):
        sys.modules.pop(name, None)
    assert len(comp.calls) == 2  # the package and the module, once each
    assert [f.filename for f in seen] == [str(tmp_path / r / "ansible_x_payload.zip" / "zcpkg" / "mod.py")
                                          for r in ("run1", "run2")]
    assert seen[1].line == 'raise RuntimeError("from inside")'


def test_the_twin_node_loads_it_from_the_checkout_and_shares_the_hosts_cache():
    mounts = containers.zipcache_mounts()
    assert mounts[0::2] == ["-v"] * 3
    sources = {dest: src for src, dest, *_ in (m.split(":") for m in mounts[1::2])}
    site = "/usr/lib/python3/dist-packages"
    assert sources[f"{site}/simlab_zipcache.py"] == zipcache.__file__
    assert sources[f"{site}/simlab_zipcache.pth"] == str(vm_image.ZIPCACHE_PTH)
    assert sources[zipcache.CACHE_DIR] == str(containers.ZIPCACHE)


def test_the_pth_installs_it_unless_python_is_isolated(tmp_path):
    """The .pth both kinds of node load, run by a Python as site would."""
    site = tmp_path / "site"
    site.mkdir()
    for f in (vm_image.ZIPCACHE, vm_image.ZIPCACHE_PTH):
        (site / f.name).write_bytes(f.read_bytes())
    probe = "import zipimport; print(zipimport._compile_source.__name__)"
    env = dict(os.environ, SIMLAB_ZIPCACHE_DIR=str(tmp_path / "cache"))
    run = lambda *flags: subprocess.run(  # noqa: E731
        [sys.executable, *flags, "-c", f"import site; site.addsitedir({str(site)!r}); {probe}"],
        capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert run() == "cached_compile_source"
    assert run("-I") == "_compile_source"
