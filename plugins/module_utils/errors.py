# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors raised by the gpuops.node parsers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ParseError(Exception):
    """Output of a command could not be read.

    The message always names the command and, when known, the line number and
    the text of the line that could not be read, so an operator can find the
    problem in the raw output without a traceback.
    """

    def __init__(self, command, reason, line_no=None, line=None):
        self.command = command
        self.reason = reason
        self.line_no = line_no
        self.line = line
        where = ''
        if line_no is not None:
            where = ' line %d' % line_no
        text = '%s:%s %s' % (command, where, reason)
        if line is not None:
            shown = line if len(line) <= 160 else line[:157] + '...'
            text += ': %r' % shown
        super(ParseError, self).__init__(text)

    def to_dict(self):
        return {
            'command': self.command,
            'reason': self.reason,
            'line_no': self.line_no,
            'line': self.line,
            'message': str(self),
        }
