# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing a file on the node the way every module of the collection does: whole or not at all."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import tempfile


def write_atomic(module, path, data, mode=None):
    """Write ``data`` (text, as UTF-8, or bytes) to ``path`` through a temporary file in the same directory and
    ``module.atomic_move``, so a reader sees the old file or the new one, never a part.

    The directory is created (0755) when missing. ``mode`` is set on the file when given; without it a file that
    existed keeps its mode and owner (atomic_move copies them) and a new one gets the umask's.
    """
    directory = os.path.dirname(path) or '.'
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data if isinstance(data, bytes) else data.encode('utf-8'))
        if mode is not None:
            os.chmod(tmp, mode)
        module.atomic_move(tmp, path)
        if mode is not None:
            os.chmod(path, mode)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
