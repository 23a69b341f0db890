# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PCI addresses as the tools write them, and as sysfs names them.

nvidia-smi writes a bus id with an eight-digit domain (``00000000:19:00.0``), sysfs and the kernel with four
(``0000:19:00.0``). Every layer compares them (the facts, the checks, the plans, the report's drawings), so the one
normalisation lives here, beside no reader of the node.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# domain (4 to 8 hex digits), bus, device, function
PCI_ADDRESS = re.compile(r'^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')


def sysfs_pci_address(bus_id):
    """nvidia-smi's ``00000000:19:00.0`` -> sysfs ``0000:19:00.0``; None when ``bus_id`` is no PCI address."""
    if not bus_id:
        return None
    match = PCI_ADDRESS.match(bus_id.strip())
    if not match:
        return None
    domain = match.group(1)[-4:]
    return ('%s:%s:%s.%s' % (domain, match.group(2), match.group(3), match.group(4))).lower()
