"""Offline stand-in for the get-pip.py bootstrap script that ansible-test downloads.

ansible-test bootstraps pip into the virtual environments it creates for sanity
tests by running ~/.ansible/test/cache/get_pip_<version>.py, which it would
otherwise download from a host that is not reachable from CI. This shim gives it
the same behaviour from what is available: pip from the interpreter's own
ensurepip, then the requested packages (e.g. pip==24.2) from the configured
package index.

`tests/scripts/install-get-pip-shim.sh` copies it into place.
"""

import os
import subprocess
import sys

# get-pip.py options that are not pip options.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main():
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
    env = dict(os.environ)
    # ensurepip sets PIP_CONFIG_FILE=/dev/null for its own run, and the variable
    # can leak into this process's environment; drop it so the machine's pip
    # configuration (index, find-links, certificates) applies to the real install.
    env.pop("PIP_CONFIG_FILE", None)
    if args:
        subprocess.check_call([sys.executable, "-m", "pip", "install"] + args, env=env)


if __name__ == "__main__":
    main()
