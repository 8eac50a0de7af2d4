"""Bytecode cache for modules imported from zip files, installed in the VM
node image (simlab only; never on a real host).

Ansible runs every module as an AnsiballZ zip, and Python never caches the
bytecode of what it imports from a zip: each module run compiles
ansible.module_utils.basic and its imports again. Under TCG that is about
2.3 s of the 3 s a module run costs on a VM node. This keeps the compiled
code of each source, keyed by the interpreter's cache tag and the source's
SHA-256, in CACHE_DIR. Nothing else changes: the source in the zip is still
what runs, and the code object's file names are set to the zip path of this
run, as importlib does for .pyc files.

Loaded by a .pth file in site-packages.
"""

import marshal
import os
import sys

CACHE_DIR = "/var/cache/simlab-zipcache"


def install(cache_dir=CACHE_DIR):
    import _imp
    import zipimport

    compile_source = zipimport._compile_source
    tag = sys.implementation.cache_tag

    def cached_compile_source(pathname, source):
        import hashlib

        key = hashlib.sha256(source).hexdigest()
        path = os.path.join(cache_dir, "%s-%s.pyc" % (tag, key))
        try:
            with open(path, "rb") as f:
                code = marshal.loads(f.read())
        except (OSError, EOFError, ValueError, TypeError):
            code = None
        if code is not None:
            _imp._fix_co_filename(code, pathname)
            return code
        code = compile_source(pathname, source)
        try:
            os.makedirs(cache_dir, 0o755, exist_ok=True)
            tmp = "%s.%d.tmp" % (path, os.getpid())
            with open(tmp, "wb") as f:
                f.write(marshal.dumps(code))
            os.replace(tmp, path)
        except OSError:
            pass
        return code

    zipimport._compile_source = cached_compile_source


if not sys.flags.isolated:
    install(os.environ.get("SIMLAB_ZIPCACHE_DIR", CACHE_DIR))
