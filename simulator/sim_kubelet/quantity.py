# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kubernetes quantities (k8s.io/apimachinery/pkg/api/resource/quantity.go) and CPU sets
(k8s.io/utils/cpuset) as the kubelet stand-in parses and prints them.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from .messages import quote

_SUFFIX = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60,
           'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15, 'E': 10 ** 18, '': 1}


def parse_quantity(text):
    """(value rounded up to an integer, 'BinarySI' or 'DecimalSI'); ValueError when not a quantity."""
    match = re.match(r'^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$', str(text).strip())
    if not match:
        raise ValueError('quantities must match the regular expression '
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    number, exp, suffix = match.group(1), match.group(2), match.group(3) or ''
    whole, _dot, frac = number.lstrip('+').partition('.')
    sign = -1 if whole.startswith('-') else 1
    digits = int((whole.lstrip('-') or '0') + frac)
    num, den = digits, 10 ** len(frac)
    if exp:
        power = int(exp[1:])
        num, den = (num * 10 ** power, den) if power >= 0 else (num, den * 10 ** -power)
    elif suffix == 'm':
        den *= 1000
    else:
        num *= _SUFFIX[suffix]
    return sign * -(-num // den), ('BinarySI' if suffix.endswith('i') else 'DecimalSI')


def format_quantity(value, fmt='DecimalSI'):
    """Quantity.String() of an integer: the canonical form of its format (BinarySI below 1024 prints decimal)."""
    if value == 0:
        return '0'
    sign, value = ('-' if value < 0 else ''), abs(value)
    if fmt == 'BinarySI' and value >= 1024:
        for suffix in ('Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'):
            if value % _SUFFIX[suffix] == 0:
                return '%s%d%s' % (sign, value // _SUFFIX[suffix], suffix)
        return sign + str(value)
    for suffix in ('E', 'P', 'T', 'G', 'M', 'k'):
        if value % _SUFFIX[suffix] == 0:
            return '%s%d%s' % (sign, value // _SUFFIX[suffix], suffix)
    return sign + str(value)


def add_quantities(texts):
    """Sum of quantities as Quantity.Add does: the result keeps the format of the first non-zero term."""
    total, fmt = 0, 'DecimalSI'
    for text in texts:
        if text is None:
            continue
        value, this = parse_quantity(text)
        if total == 0:
            fmt = this
        total += value
    return total, fmt


def parse_cpuset(text):
    cpus = set()
    for part in str(text).split(','):
        part = part.strip()
        if not part:
            continue
        low, _dash, high = part.partition('-')
        if not low.isdigit() or (high and not high.isdigit()) or (high and int(high) < int(low)):
            raise ValueError('invalid range: %s' % part if _dash else 'strconv.Atoi: parsing %s: invalid syntax'
                             % quote(part))
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def format_cpuset(cpus):
    out, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else '%d-%d' % (cpus[i], cpus[j]))
        i = j + 1
    return ','.join(out)
