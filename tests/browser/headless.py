# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Debian's chromium, headless: the DOM it builds from a page, the page's height, a full-page screenshot.

Every call gets its own temporary profile (--user-data-dir) and runs under a time limit. The report page has
no script; its height is measured on a copy of it with one appended script that writes
``document.documentElement.scrollHeight`` into an attribute of the <html> element, read back from that
copy's dumped DOM. The screenshot of the page itself is then taken with a window exactly that tall
(capped at MAX_HEIGHT pixels: a longer page is cut there, and the cut is reported).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import shutil
import struct
import subprocess
import tempfile

CHROMIUM_NAMES = ('chromium', 'chromium-browser')
TIMEOUT = 60
WIDTH = 1400
MAX_HEIGHT = 16000
MIN_HEIGHT = 200
HEIGHT_ATTR = 'data-measured-height'
_MEASURE = ('<script>document.documentElement.setAttribute("%s", '
            'String(Math.ceil(document.documentElement.scrollHeight)));</script>' % HEIGHT_ATTR)


class ChromiumError(RuntimeError):
    """chromium failed, timed out or wrote nothing."""


def find_chromium():
    """Path of the chromium command, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def in_ci(environ=None):
    """True when the CI variable says this is a CI run (set, and not 0/false/no)."""
    value = (os.environ if environ is None else environ).get('CI', '')
    return value.strip().lower() not in ('', '0', 'false', 'no')


def major_version(chromium):
    """chromium's major version (0 when it cannot be told)."""
    try:
        out = subprocess.run([chromium, '--version'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=TIMEOUT, check=False).stdout.decode('utf-8', 'replace')
    except (OSError, subprocess.TimeoutExpired):
        return 0
    match = re.search(r'(\d+)\.\d+', out)
    return int(match.group(1)) if match else 0


class Chromium(object):
    """One chromium binary and the flags every call uses."""

    def __init__(self, path):
        self.path = path
        self.version = major_version(path)
        # --headless=new exists since chromium 109; older ones only know the old headless mode
        self.headless = '--headless=new' if self.version >= 109 else '--headless'
        self.calls = []

    def _run(self, args, window_height):
        profile = tempfile.mkdtemp(prefix='gpuops-chromium-')
        argv = [self.path, self.headless, '--no-sandbox', '--disable-gpu', '--no-first-run',
                '--no-default-browser-check', '--disable-extensions', '--hide-scrollbars',
                '--user-data-dir=' + profile, '--window-size=%d,%d' % (WIDTH, window_height)] + list(args)
        self.calls.append(argv)
        try:
            done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise ChromiumError('chromium ran past %d s: %s' % (TIMEOUT, ' '.join(argv)))
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        if done.returncode != 0:
            raise ChromiumError('chromium exited %d: %s\n%s' % (
                done.returncode, ' '.join(argv), done.stderr.decode('utf-8', 'replace')[-3000:]))
        return done.stdout.decode('utf-8')

    def dump_dom(self, page, window_height=800):
        """The DOM chromium built from ``page`` (a file), serialized."""
        dom = self._run(['--dump-dom', _url(page)], window_height)
        if '<html' not in dom:
            raise ChromiumError('chromium dumped no DOM for %s: %r' % (page, dom[:300]))
        return dom

    def page_height(self, page):
        """Height in CSS pixels of ``page`` laid out WIDTH pixels wide (measured on a copy with a script)."""
        with open(page, 'rb') as handle:
            text = handle.read().decode('utf-8')
        at = text.lower().rfind('</body>')
        measured = (text[:at] + _MEASURE + text[at:]) if at >= 0 else text + _MEASURE
        work = tempfile.mkdtemp(prefix='gpuops-measure-')
        try:
            copy = os.path.join(work, 'measure.html')
            with open(copy, 'wb') as handle:
                handle.write(measured.encode('utf-8'))
            # a short window: scrollHeight is then the height of the content, not of the viewport
            dom = self.dump_dom(copy, window_height=MIN_HEIGHT)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        match = re.search(r'<html[^>]*\s%s="(\d+)"' % HEIGHT_ATTR, dom)
        if not match:
            raise ChromiumError('the measuring script of %s reported no height' % page)
        return int(match.group(1))

    def screenshot(self, page, png):
        """A screenshot of the whole of ``page`` (up to MAX_HEIGHT) -> {'height', 'page_height', 'cut'}."""
        height = self.page_height(page)
        window = max(MIN_HEIGHT, min(height, MAX_HEIGHT))
        parent = os.path.dirname(os.path.abspath(png))
        if not os.path.isdir(parent):
            os.makedirs(parent)
        if os.path.exists(png):
            os.remove(png)
        self._run(['--screenshot=' + os.path.abspath(png), _url(page)], window)
        if not os.path.isfile(png):
            raise ChromiumError('chromium wrote no screenshot to %s' % png)
        return {'height': window, 'page_height': height, 'cut': height > MAX_HEIGHT}


def _url(path):
    return 'file://' + os.path.abspath(path)


def png_size(path):
    """(width, height) of a PNG file."""
    with open(path, 'rb') as handle:
        head = handle.read(24)
    if len(head) < 24 or head[:8] != b'\x89PNG\r\n\x1a\n' or head[12:16] != b'IHDR':
        raise ValueError('%s is not a PNG file' % path)
    return struct.unpack('>II', head[16:24])
