# -*- coding: utf-8 -*-
# Copyright: gpuops.node contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``dcgm-exporter`` stand-in of simulated nodes (installed by simulator/sim_dcgm.py's sync).

    dcgm-exporter [-f|--collectors CSV] [-a|--address [HOST]:PORT] [-r|--remote-hostengine-info HOST:PORT]
                  [--web-config-file FILE] [-c|--collect-interval MS] [-v|--version]

(and the real environment variables DCGM_EXPORTER_COLLECTORS, DCGM_EXPORTER_LISTEN,
DCGM_REMOTE_HOSTENGINE_INFO, DCGM_EXPORTER_WEB_CONFIG_FILE). Serves ``/metrics`` in the Prometheus text
exposition format with the real label set (``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``,
``Hostname``, and one label per ``label`` line of the CSV such as ``DCGM_FI_DRIVER_VERSION``), only the fields
the CSV lists; a field it does not know stops the start, as the real one does with an unknown DCGM field.
Values from the profile XML (clocks, temperatures, power, memory, utilisation, ECC counts, remapped rows); XID
and NVLink error counters 0. ``-r``: the host engine must answer (else the real error, exit 1); without
``-r`` (embedded DCGM) the driver must be loaded. ``--web-config-file``: the Prometheus exporter-toolkit
format (``tls_server_config.cert_file/key_file``, ``basic_auth_users: {name: bcrypt hash}``), the hashes
checked with the C library's crypt(3) (libxcrypt: ``$2b$``/``$2y$``); an exporter that cannot check bcrypt
refuses to start.

Stdlib only; Python 3.8+.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import os
import re
import socket
import ssl
import sys
import time
import warnings
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

try:
    from . import nvidia_smi
    from . import sim_dcgm_core
except ImportError:  # the stand-in (simulator/sim_dcgm.py) run from the simulator's lib directory
    import nvidia_smi  # noqa: E402
    import sim_dcgm_core  # noqa: E402

DEFAULT_COLLECTORS = '/etc/dcgm-exporter/default-counters.csv'
DEFAULT_ADDRESS = ':9400'
VERSION = '4.6.0-4.8.3'
STARTED = time.time()


class ExporterError(Exception):
    """The exporter cannot start (logged at level ERROR, exit status 1)."""


def _num(text):
    match = re.match(r'^\s*(-?\d+(?:\.\d+)?)', text or '')
    return float(match.group(1)) if match else 0.0


def _xml(*paths):
    """A field read from the first of ``paths`` the GPU's XML block has (units stripped; N/A reads 0)."""
    def read(gpu):
        for path in paths:
            value = nvidia_smi.get_value(gpu['block'], path)
            if value is not None:
                return _num(value)
        return 0.0
    return read


def _xml_sum(*paths):
    def read(gpu):
        return sum(_xml(path)(gpu) for path in paths)
    return read


def _yes(path):
    def read(gpu):
        return 1.0 if (nvidia_smi.get_value(gpu['block'], path) or '').strip() == 'Yes' else 0.0
    return read


def _zero(_gpu):
    return 0.0


def _energy(gpu):
    """mJ since the exporter started, at the profile's power draw."""
    return float(int(_xml('power_readings/power_draw', 'gpu_power_readings/power_draw')(gpu) *
                     (time.time() - STARTED) * 1000))


def _ecc(kind, group):
    if kind == 'sbe':
        return lambda gpu: (_xml('ecc_errors/%s/single_bit/total' % group)(gpu) or _xml_sum(
            'ecc_errors/%s/sram_correctable' % group, 'ecc_errors/%s/dram_correctable' % group)(gpu))
    return lambda gpu: (_xml('ecc_errors/%s/double_bit/total' % group)(gpu) or _xml_sum(
        'ecc_errors/%s/sram_uncorrectable' % group, 'ecc_errors/%s/dram_uncorrectable' % group)(gpu))


# The DCGM fields the stand-in knows (the real exporter knows every DCGM field; a CSV naming another one is refused
# here): the default counters, the DCP metrics and what the alert rules read.
FIELDS = {
    'DCGM_FI_DEV_SM_CLOCK': _xml('clocks/sm_clock'),
    'DCGM_FI_DEV_MEM_CLOCK': _xml('clocks/mem_clock'),
    'DCGM_FI_DEV_MEMORY_TEMP': _xml('temperature/memory_temp'),
    'DCGM_FI_DEV_GPU_TEMP': _xml('temperature/gpu_temp'),
    'DCGM_FI_DEV_POWER_USAGE': _xml('power_readings/power_draw', 'gpu_power_readings/power_draw'),
    'DCGM_FI_DEV_POWER_MGMT_LIMIT': _xml('power_readings/power_limit', 'gpu_power_readings/current_power_limit'),
    'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION': _energy,
    'DCGM_FI_DEV_PCIE_REPLAY_COUNTER': _xml('pci/replay_counter'),
    'DCGM_FI_DEV_GPU_UTIL': _xml('utilization/gpu_util'),
    'DCGM_FI_DEV_MEM_COPY_UTIL': _xml('utilization/memory_util'),
    'DCGM_FI_DEV_ENC_UTIL': _xml('utilization/encoder_util'),
    'DCGM_FI_DEV_DEC_UTIL': _xml('utilization/decoder_util'),
    'DCGM_FI_DEV_XID_ERRORS': _zero,
    'DCGM_FI_DEV_FB_FREE': _xml('fb_memory_usage/free'),
    'DCGM_FI_DEV_FB_USED': _xml('fb_memory_usage/used'),
    'DCGM_FI_DEV_FB_TOTAL': _xml('fb_memory_usage/total'),
    'DCGM_FI_DEV_FB_RESERVED': _xml('fb_memory_usage/reserved'),
    'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL': _zero,
    'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL': _zero,
    'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL': _zero,
    'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL': _zero,
    'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL': _zero,
    'DCGM_FI_DEV_VGPU_LICENSE_STATUS': _zero,
    'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS': _xml('remapped_rows/remapped_row_unc'),
    'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS': _xml('remapped_rows/remapped_row_cor'),
    'DCGM_FI_DEV_ROW_REMAP_FAILURE': _yes('remapped_rows/remapped_row_failure'),
    'DCGM_FI_DEV_ROW_REMAP_PENDING': _yes('remapped_rows/remapped_row_pending'),
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL': _ecc('sbe', 'volatile'),
    'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL': _ecc('dbe', 'volatile'),
    'DCGM_FI_DEV_ECC_SBE_AGG_TOTAL': _ecc('sbe', 'aggregate'),
    'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL': _ecc('dbe', 'aggregate'),
    'DCGM_FI_DEV_RETIRED_SBE': _xml('retired_pages/multiple_single_bit_retirement/retired_count'),
    'DCGM_FI_DEV_RETIRED_DBE': _xml('retired_pages/double_bit_retirement/retired_count'),
    'DCGM_FI_DEV_RETIRED_PENDING': _yes('retired_pages/pending_retirement'),
    'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS': _zero,
    'DCGM_FI_DEV_CLOCKS_EVENT_REASONS': _zero,
    'DCGM_FI_DEV_POWER_VIOLATION': _zero,
    'DCGM_FI_DEV_THERMAL_VIOLATION': _zero,
    'DCGM_FI_DEV_SYNC_BOOST_VIOLATION': _zero,
    'DCGM_FI_DEV_BOARD_LIMIT_VIOLATION': _zero,
    'DCGM_FI_DEV_LOW_UTIL_VIOLATION': _zero,
    'DCGM_FI_DEV_RELIABILITY_VIOLATION': _zero,
    'DCGM_FI_DEV_NVLINK_BANDWIDTH_L0': _zero,
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE': _zero,
    'DCGM_FI_PROF_SM_ACTIVE': _zero,
    'DCGM_FI_PROF_SM_OCCUPANCY': _zero,
    'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE': _zero,
    'DCGM_FI_PROF_DRAM_ACTIVE': _zero,
    'DCGM_FI_PROF_PIPE_FP64_ACTIVE': _zero,
    'DCGM_FI_PROF_PIPE_FP32_ACTIVE': _zero,
    'DCGM_FI_PROF_PIPE_FP16_ACTIVE': _zero,
    'DCGM_FI_PROF_PCIE_TX_BYTES': _zero,
    'DCGM_FI_PROF_PCIE_RX_BYTES': _zero,
    'DCGM_FI_PROF_NVLINK_TX_BYTES': _zero,
    'DCGM_FI_PROF_NVLINK_RX_BYTES': _zero,
}
LABEL_FIELDS = {'DCGM_FI_DRIVER_VERSION': 'driver', 'DCGM_FI_DEV_NAME': 'name', 'DCGM_FI_DEV_UUID': 'uuid',
                'DCGM_FI_DEV_SERIAL': 'serial', 'DCGM_FI_DEV_MINOR_NUMBER': 'minor', 'DCGM_FI_DEV_BRAND': 'brand',
                'DCGM_FI_NVML_VERSION': 'nvml', 'DCGM_FI_DEV_VBIOS_VERSION': 'vbios',
                'DCGM_FI_DEV_INFOROM_IMAGE_VER': 'inforom', 'DCGM_FI_DEV_ECC_INFOROM_VER': 'inforom_ecc',
                'DCGM_FI_DEV_OEM_INFOROM_VER': 'inforom_oem', 'DCGM_FI_DEV_POWER_INFOROM_VER': 'inforom_power'}
TYPES = ('gauge', 'counter', 'label')


def log(level, msg, **fields):
    extra = ''.join(' %s=%s' % (k, _quote(str(v))) for k, v in fields.items())
    sys.stderr.write('time=%s level=%s msg=%s%s\n' % (time.strftime('%Y-%m-%dT%H:%M:%S%z'), level, _quote(msg), extra))
    sys.stderr.flush()


def _quote(text):
    return '"%s"' % text.replace('\\', '\\\\').replace('"', '\\"') if re.search(r'[\s"=]', text) else text


def read_collectors(path):
    """[(field, type, help)] of a collectors CSV (``#`` comments and blank lines skipped)."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except (IOError, OSError) as exc:
        raise ExporterError('cannot read the collectors file %s: %s' % (path, exc))
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        parts = [p.strip() for p in line.split(',', 2)]
        if len(parts) < 2:
            raise ExporterError('%s:%d: expected "DCGM FIELD, Prometheus metric type, help message"' % (path, number))
        name, kind = parts[0], parts[1]
        if kind not in TYPES:
            raise ExporterError('%s:%d: unknown Prometheus metric type %r for %s' % (path, number, kind, name))
        if name not in (LABEL_FIELDS if kind == 'label' else FIELDS):
            raise ExporterError('could not find DCGM field %s (%s line %d)' % (name, path, number))
        found.append((name, kind, parts[2] if len(parts) > 2 else ''))
    if not any(kind != 'label' for _name, kind, _help in found):
        raise ExporterError('%s lists no DCGM field to export' % path)
    return found


def read_web_config(path):
    """The exporter-toolkit web configuration: {'tls': {'cert_file', 'key_file'} or None, 'users': {name: hash}}."""
    try:
        with open(path) as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        raise ExporterError('cannot read the web configuration %s: %s' % (path, exc))
    data, section = {}, None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(' #', 1)[0].rstrip() if not raw.lstrip().startswith('#') else ''
        if not line.strip() or line.strip() == '---':
            continue
        match = re.match(r'^( *)([A-Za-z0-9_.-]+|"[^"]*"|\'[^\']*\')\s*:\s*(.*)$', line)
        if not match:
            raise ExporterError('%s:%d: cannot read %r' % (path, number, raw))
        indent, key, value = len(match.group(1)), match.group(2).strip('"\''), match.group(3).strip()
        if value[:1] in ('"', "'") and value[-1:] == value[:1]:
            value = value[1:-1]
        if indent == 0:
            if key not in ('tls_server_config', 'http_server_config', 'basic_auth_users'):
                raise ExporterError('%s:%d: field %s not found in type web.Config' % (path, number, key))
            section = data.setdefault(key, {})
            if value not in ('', '{}'):
                raise ExporterError('%s:%d: %s must be a mapping' % (path, number, key))
        elif section is None:
            raise ExporterError('%s:%d: indented line outside a section' % (path, number))
        else:
            section[key] = value
    tls = data.get('tls_server_config')
    if tls is not None:
        if not tls.get('cert_file') or not tls.get('key_file'):
            raise ExporterError('%s: tls_server_config needs cert_file and key_file' % path)
        for key in ('cert_file', 'key_file'):
            if not os.path.isabs(tls[key]):
                tls[key] = os.path.join(os.path.dirname(os.path.abspath(path)), tls[key])
    users = data.get('basic_auth_users') or {}
    if users:
        check_bcrypt_support()
        for name, hashed in users.items():
            if not re.match(r'^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$', hashed):
                raise ExporterError('%s: the password of %s is not a bcrypt hash' % (path, name))
    return {'tls': tls, 'users': users}


def _crypt():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            import crypt  # pylint: disable=deprecated-module
        except ImportError:
            return None
    return crypt


def check_bcrypt_support():
    crypt = _crypt()
    probe = '$2b$04$' + 'a' * 22
    if crypt is None or not (crypt.crypt('probe', probe) or '').startswith('$2b$04$'):
        raise ExporterError('basic_auth_users needs bcrypt, which this system\'s crypt(3) cannot check; refusing '
                            'to start rather than accept any password')


def password_ok(users, header):
    match = re.match(r'^Basic\s+(\S+)$', header or '')
    if not match:
        return False
    try:
        name, _sep, password = base64.b64decode(match.group(1)).decode('utf-8').partition(':')
    except (ValueError, UnicodeDecodeError):
        return False
    hashed = users.get(name)
    return bool(hashed) and _crypt().crypt(password, hashed) == hashed


def render_metrics(root, collectors, hostname=None):
    hostname = hostname or os.environ.get('NODE_NAME') or socket.gethostname()
    found = sim_dcgm_core.gpus(root)
    drv = sim_dcgm_core.driver(root)
    extra = {'driver': drv.get('version') or '', 'serial': '', 'minor': ''}
    labels = [(name, LABEL_FIELDS[name]) for name, kind, _help in collectors if kind == 'label']
    lines = []
    for name, kind, text in collectors:
        if kind == 'label':
            continue
        lines += ['# HELP %s %s' % (name, text), '# TYPE %s %s' % (name, kind)]
        for gpu in found:
            pairs = [('gpu', str(gpu['id'])), ('UUID', gpu['uuid']), ('pci_bus_id', gpu['bus_id']),
                     ('device', 'nvidia%d' % gpu['id']), ('modelName', gpu['name']), ('Hostname', hostname)]
            for label, key in labels:
                value = {'name': gpu['name'], 'uuid': gpu['uuid'], 'minor': str(gpu['id']),
                         'serial': nvidia_smi.get_value(gpu['block'], 'serial'),
                         'vbios': nvidia_smi.get_value(gpu['block'], 'vbios_version'),
                         'brand': nvidia_smi.get_value(gpu['block'], 'product_brand')}.get(key, extra.get(key))
                pairs.append((label, value))
            value = FIELDS[name](gpu)
            shown = ('%d' % value) if value == int(value) else ('%f' % value)
            text_labels = ','.join('%s="%s"' % (k, (v or '').replace('\\', '\\\\').replace('"', '\\"'))
                                   for k, v in pairs)
            lines.append('%s{%s} %s' % (name, text_labels, shown))
    return '\n'.join(lines) + '\n'


class _Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_handler(root, collectors, users):
    class Handler(BaseHTTPRequestHandler):
        server_version = 'dcgm-exporter'

        def log_message(self, *_args):  # pylint: disable=arguments-differ
            return

        def _send(self, code, body, ctype='text/plain; charset=utf-8', headers=()):
            data = body.encode('utf-8')
            self.send_response(code)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(data)))
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802  # pylint: disable=invalid-name
            if users and not password_ok(users, self.headers.get('Authorization')):
                self._send(401, 'Unauthorized\n', headers=[('WWW-Authenticate', 'Basic')])
                return
            if self.path.split('?')[0] == '/metrics':
                self._send(200, render_metrics(root, collectors), 'text/plain; version=0.0.4; charset=utf-8')
            elif self.path.split('?')[0] == '/health':
                self._send(200, 'OK\n')
            else:
                self._send(404, '404 page not found\n')
    return Handler


def parse_address(text):
    host, _sep, port = (text or DEFAULT_ADDRESS).rpartition(':')
    if not port.isdigit():
        raise ExporterError('invalid address %r (expected [HOST]:PORT)' % text)
    return host.strip('[]') or '0.0.0.0', int(port)


OPTIONS = {'-f': 'collectors', '--collectors': 'collectors', '-a': 'address', '--address': 'address',
           '-r': 'remote', '--remote-hostengine-info': 'remote', '--web-config-file': 'web_config',
           '-c': 'interval', '--collect-interval': 'interval', '-d': 'devices', '--devices': 'devices'}
ENVIRONMENT = {'collectors': 'DCGM_EXPORTER_COLLECTORS', 'address': 'DCGM_EXPORTER_LISTEN',
               'remote': 'DCGM_REMOTE_HOSTENGINE_INFO', 'web_config': 'DCGM_EXPORTER_WEB_CONFIG_FILE',
               'interval': 'DCGM_EXPORTER_INTERVAL'}


def parse_args(argv):
    opts, i = {}, 0
    while i < len(argv):
        name, eq, value = argv[i].partition('=')
        if name in ('-v', '--version', '-h', '--help'):
            opts[name.strip('-')[0]] = True
        elif name in OPTIONS:
            if not eq:
                i += 1
                if i >= len(argv):
                    raise ExporterError('flag needs an argument: %s' % name)
                value = argv[i]
            opts[OPTIONS[name]] = value
        else:
            raise ExporterError('flag provided but not defined: %s' % name)
        i += 1
    for key, env in ENVIRONMENT.items():
        if key not in opts and os.environ.get(env):
            opts[key] = os.environ[env]
    return opts


def start(argv, root=None, ready=None):
    """Parse, check and serve (forever); returns the exit status when it cannot start."""
    root = root or sim_dcgm_core.root_dir()
    try:
        opts = parse_args(argv)
        if opts.get('h') or opts.get('v'):
            sys.stdout.write('dcgm-exporter version %s (gpuops-sim stand-in)\n' % VERSION)
            return 0
        collectors = read_collectors(opts.get('collectors') or DEFAULT_COLLECTORS)
        web = read_web_config(opts['web_config']) if opts.get('web_config') else {'tls': None, 'users': {}}
        bind, port = parse_address(opts.get('address'))
        if opts.get('remote'):
            host, remote_port = sim_dcgm_core.parse_host(opts['remote'])
            log('INFO', 'Attempting to connect to remote hostengine at %s' % opts['remote'])
            try:
                sim_dcgm_core.request(host, remote_port, {'op': 'ping'}, timeout=5)
            except (OSError, ValueError):
                log('ERROR', 'Failed to connect to remote hostengine', mode='standalone', address=opts['remote'],
                    error='error connecting to nv-hostengine: %s' % sim_dcgm_core.CONNECTION_ERROR)
                return 1
        else:
            state = sim_dcgm_core.driver(root)
            if not state['loaded']:
                log('ERROR', 'Failed to initialize DCGM in embedded mode', error=sim_dcgm_core.NVML_FAILED.strip())
                return 1
        server = _Server((bind, port), make_handler(root, collectors, web['users']))
        if web['tls']:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(web['tls']['cert_file'], web['tls']['key_file'])
            server.socket = context.wrap_socket(server.socket, server_side=True)
    except ExporterError as exc:
        log('ERROR', 'Exiting', error=str(exc))
        return 1
    except (OSError, ssl.SSLError) as exc:
        log('ERROR', 'Failed to start the web server', error=str(exc))
        return 1
    log('INFO', 'Starting webserver')
    log('INFO', 'Listening on', address='%s:%d' % (bind, server.server_address[1]))
    log('INFO', 'TLS is %s.' % ('enabled' if web['tls'] else 'disabled'), http2='false',
        address='%s:%d' % (bind, server.server_address[1]))
    if ready is not None:
        ready(server)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def main(argv):
    return start(argv)
