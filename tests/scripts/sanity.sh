#!/usr/bin/env bash
# Run ansible-test sanity for gpuops.node on a copy of the collection at
# .build/sanity/ansible_collections/gpuops/node (ansible-test requires the
# collection to live under an ansible_collections/NAMESPACE/NAME path).
#
#  every test with the controller python (the venv's, 3.11), and `compile` and
#  `import` also with every other target python 3.8 ... 3.13 that is installed
#  (pyenv versions or pythonX.Y on PATH), in one ansible-test run.
#
# Environment:
#   SANITY_PYTHON           controller python version for the full run (default: the venv's)
#   SANITY_TARGET_PYTHONS   versions for compile/import (default "3.8 3.9 3.10 3.12 3.13")
#   SANITY_EXTRA_ARGS       extra ansible-test arguments (e.g. "--test pylint")
#   SANITY_SKIP_TARGETS=1   the controller python only
#   SANITY_DATA_EXCLUDES    data directories left out of the copy
#                           (default "tests/fixtures simulator/profiles")
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${VENV:-$repo/.venv}"
py="$venv/bin/python"
ansible_test="$venv/bin/ansible-test"
dest="$repo/.build/sanity/ansible_collections/gpuops/node"
controller_version="${SANITY_PYTHON:-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}"
targets="${SANITY_TARGET_PYTHONS:-3.8 3.9 3.10 3.12 3.13}"

log() { printf '[sanity] %s\n' "$*"; }

# ansible-test bootstraps pip in its virtual environments with a script it
# downloads from a host we cannot reach; install the offline shim instead.
bash "$repo/tests/scripts/install-get-pip-shim.sh" "$py"

# Data trees are not code and are left out of the copy: the real captures
# (never edited), and the generated simulator profiles, whose sysfs paths
# contain ':' (PCI addresses), which ansible-test's no-illegal-filenames test
# cannot even report. SANITY_DATA_EXCLUDES overrides the list.
data_excludes=()
for path in ${SANITY_DATA_EXCLUDES:-tests/fixtures simulator/profiles}; do
  data_excludes+=("--exclude=/${path%/}/")
done

# A clean copy of what git would track: .gitignore'd paths, the venv, build
# output and VCS data stay out.
log "copying collection to $dest"
mkdir -p "$dest"
rsync -a --delete --delete-excluded \
  --exclude=/.git/ --exclude=/.venv/ --exclude=/.build/ --exclude=/.cache/ \
  --exclude=/tests/output/ --exclude=__pycache__/ --exclude=.pytest_cache/ \
  --filter=':- .gitignore' \
  "${data_excludes[@]}" \
  "$repo/" "$dest/"
# ansible-test lists the collection's files through git when it is a git work tree.
(
  cd "$dest"
  rm -rf .git
  git init -q .
  git add -A .
)

find_python() {
  local v="$1" p
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
    [[ -x "$p" ]] && { echo "$p"; return 0; }
  done
  p="$(command -v "python$v" 2>/dev/null || true)"
  # pyenv shims exist for every installed version but only run the active one
  if [[ -n "$p" && "$p" != */shims/* ]] && "$p" -c 'pass' 2>/dev/null; then
    echo "$p"; return 0
  fi
  return 1
}

# ansible-test runs target pythons by name (pythonX.Y from PATH) even when
# --python-interpreter is given, and pyenv shims only run the active version:
# put the real interpreters first on PATH.
bindir="$repo/.build/sanity-bin"
rm -rf "$bindir"
mkdir -p "$bindir"
for v in $targets; do
  if interp="$(find_python "$v")"; then
    ln -s "$interp" "$bindir/python$v"
  fi
done
export PATH="$bindir:$PATH"

cd "$dest"
rc=0
start=$SECONDS
read -r -a extra_args <<< "${SANITY_EXTRA_ARGS:-}"
if [[ "${SANITY_SKIP_TARGETS:-0}" == 1 || -n "${SANITY_PYTHON:-}" ]]; then
  log "full sanity, python $controller_version ($py)"
  "$ansible_test" sanity --color no --python "$controller_version" --python-interpreter "$py" "${extra_args[@]}" || rc=$?
else
  # One run: every test with the controller python, and the tests that run per target python (compile, import)
  # with each target python found on PATH (.build/sanity-bin) as well; a version that is not there is skipped.
  found=("$controller_version")
  for v in $targets; do [[ -x "$bindir/python$v" ]] && found+=("$v"); done
  log "full sanity, python $controller_version ($py); compile and import also with python ${found[*]:1}"
  missing=""
  for v in $targets; do [[ -x "$bindir/python$v" || "$v" == "$controller_version" ]] || missing="$missing $v"; done
  [[ -z "$missing" ]] || log "python$missing not installed: compile and import skipped for it"
  "$ansible_test" sanity --color no "${extra_args[@]}" || rc=$?
fi
log "sanity finished in $((SECONDS - start))s (rc=$rc)"

if [[ $rc -ne 0 ]]; then
  log "FAILED (see above; results under $dest/tests/output)"
fi
exit $rc
