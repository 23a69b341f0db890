#!/usr/bin/env bash
# Put tests/scripts/get_pip_shim.py where ansible-test looks for its cached pip
# bootstrap script (~/.ansible/test/cache/get_pip_<version>.py), for the pip
# version that the installed ansible-test wants. Usage: install-get-pip-shim.sh PYTHON
set -euo pipefail
python="${1:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$("$python" - <<'PY'
import re, pathlib, ansible_test
src = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
m = re.search(r"pip='([0-9.]+)'", src.read_text())
print(m.group(1) if m else "")
PY
)"
if [[ -z "$version" ]]; then
  echo "install-get-pip-shim: cannot find ansible-test's pip version" >&2
  exit 1
fi
cache="${HOME}/.ansible/test/cache"
mkdir -p "$cache"
target="$cache/get_pip_${version//./_}.py"
if ! cmp -s "$here/get_pip_shim.py" "$target"; then
  cp "$here/get_pip_shim.py" "$target"
  echo "install-get-pip-shim: installed $target (pip $version)"
fi
