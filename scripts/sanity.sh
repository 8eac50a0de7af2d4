#!/usr/bin/env bash
# ansible-test sanity on the collection as it would be built: the files git
# tracks, without the twin, the tests that need it, molecule or bench, copied
# into an ansible_collections/gpufabric/stack tree as ansible-test requires.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# SANITY_TREE lets several checkouts or runs work side by side.
tree=${SANITY_TREE:-.build/sanity}
dest=$tree/ansible_collections/gpufabric/stack
rm -rf "$tree"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard \
  | grep -zvE '^(simlab|tests|molecule|bench|scripts|\.ci|docs)/|^(Makefile|pytest\.ini|requirements.*\.txt|\.gitignore)$' \
  | xargs -0 -I{} cp --parents {} "$dest"
cd "$dest"
git init -q . && git add -A >/dev/null
# The tests run from a virtualenv of their own, with the requirements of
# this ansible-core release installed by ansible-test (--requirements), so the
# controller venv stays as requirements.txt pins it.  pylint is left out (slow;
# ansible-lint and the unit tests cover the same ground).
svenv="$top/.build/sanity-venv"
if [ ! -x "$svenv/bin/ansible-test" ]; then
  python3 -m venv "$svenv"
  "$svenv/bin/pip" install --quiet --disable-pip-version-check "$(grep '^ansible-core==' "$top/requirements.txt")"
fi
# ansible-test bootstraps pip in its per-test venvs with a script it
# downloads; supply the offline stand-in in its cache instead.
pipver=$("$svenv/bin/python" -c 'import ansible_test._internal.python_requirements as r; print(r.get_venv_packages(r.PythonConfig if False else type("P", (), {"version": "3.11"})())["pip"])' 2>/dev/null || echo 24.2)
mkdir -p ~/.ansible/test/cache
cp "$top/scripts/get_pip_offline.py" ~/.ansible/test/cache/"get_pip_${pipver//./_}.py"
"$svenv/bin/ansible-test" sanity --python 3.11 --local --requirements --color no --skip-test pylint "$@"
