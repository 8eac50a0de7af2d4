"""Bytecode cache for modules imported from zip files, in the Python of the
lab's nodes: the twin's containers (mounted from the checkout) and the VM
nodes' image (written into it).  simlab only; never on a real host.

Ansible runs every module as an AnsiballZ zip, written to a new temporary file
for each run, and Python never caches the bytecode of what it imports from a
zip: each module run compiles ansible.module_utils.basic and its imports again.
Under TCG that is about 2.3 s of the 3 s a module run costs on a VM node; on a
twin node, about 0.15 CPU-s of a ping's 0.45, on the cores the controller and
the other nodes share.  This keeps the compiled code of each source, keyed by
the interpreter's cache tag, bytecode magic and optimisation level and the
source's SHA-256, in the cache directory (a twin node's is the host's
``$SIMLAB_HOME/.zipcache``, shared by every node of every lab; removing it
resets the cache).  Nothing else changes: the source in the zip is still what runs,
and the code object's file names are set to the zip path of this run, as
importlib does for .pyc files.  Anything the cache cannot read or write is
compiled, as Python does without it.

Loaded by ``simlab_zipcache.pth`` in site-packages.  Standard library only.
"""

import marshal
import os
import sys
import zipimport

CACHE_DIR = "/var/cache/simlab-zipcache"
_compile_source = zipimport._compile_source


def entry(cache_dir, source):
    """The cache file of a source: the interpreter's cache tag, bytecode
    magic and optimisation level (``-O`` drops asserts: other code), and the
    source's SHA-256 (the zip it came from is a new file each run)."""
    import hashlib
    from _frozen_importlib_external import MAGIC_NUMBER

    key = hashlib.sha256(MAGIC_NUMBER + source).hexdigest()
    return os.path.join(cache_dir, "%s-O%d-%s.pyc" % (sys.implementation.cache_tag, sys.flags.optimize, key))


def compile_source(pathname, source, cache_dir=CACHE_DIR, compile_=None):
    """zipimport's compile step, through the cache in ``cache_dir``.  Any
    error reading or writing the cache (a damaged entry makes marshal raise
    more than one kind) compiles as zipimport does and leaves the import be."""
    import _imp

    path = entry(cache_dir, source)
    try:
        with open(path, "rb") as f:
            code = marshal.loads(f.read())
    except Exception:
        code = None
    if code is not None and type(code) is type(compile_source.__code__):
        _imp._fix_co_filename(code, pathname)
        return code
    code = (compile_ or _compile_source)(pathname, source)
    try:
        import tempfile

        os.makedirs(cache_dir, 0o755, exist_ok=True)
        # a name no other writer has: the twin's nodes share the directory,
        # and their process ids repeat from one container to the next
        fd, tmp = tempfile.mkstemp(prefix=".new-", dir=cache_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(code))
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except Exception:
        pass
    return code


def install(cache_dir=None):
    """Compile what zipimport imports through the cache from now on."""
    cache_dir = cache_dir or os.environ.get("SIMLAB_ZIPCACHE_DIR", CACHE_DIR)

    def cached_compile_source(pathname, source):
        return compile_source(pathname, source, cache_dir)

    zipimport._compile_source = cached_compile_source
