# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node health checks of one node (controller side, pure).

- nhc_checks: the NHC check lines of a node, from its probed topology and the nhc role's settings.

NHC eval()s each line of nhc.conf in bash, so every argument is checked here: a plain word as it is, words with
spaces single-quoted, anything else refused. The template only writes the lines.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.module_utils._topology import pcie_speed_gts

# An argument NHC may see unquoted, and one it may see inside single quotes (a GPU model name has spaces).
_WORD = re.compile(r'[A-Za-z0-9_.:,/%+=@-]+\Z')
_QUOTABLE = re.compile(r'[A-Za-z0-9_.:,/%+=@() -]+\Z')
_CHECK_NAME = re.compile(r'check_[a-z0-9_]+\Z')

DEFAULTS = {
    'gpu_count': 'auto',
    'gpu_model': 'auto',
    'driver_version': 'auto',
    'persistence': True,
    'xid_window': 7200,
    'fatal_xids': [],
    'memory': True,
    'pcie': True,
    'nvlink': True,
    'fabricmanager': True,
    'ib': True,
    'ib_flap_window': 86400,
    'ib_flap_max': 5,
    'clock_sync': True,
    'munge': True,
    'mounts': [],
    'extra': [],
}


def _arg(value, what):
    text = str(value)
    if _WORD.match(text):
        return text
    if _QUOTABLE.match(text) and text.strip():
        return "'%s'" % text
    raise AnsibleFilterError('nhc_checks: %s %r cannot be given to NHC (it evaluates nhc.conf lines in bash): use letters, '
                             'digits, spaces and _.:,/%%+=@()-' % (what, text))


def _count(value, what, minimum=0):
    if isinstance(value, float) and value.is_integer():
        # 86400.0: a whole number written with a decimal point, as argument validation accepts it for type int.
        value = int(value)
    if isinstance(value, bool):
        raise AnsibleFilterError('nhc_checks: %s must be a whole number, got %r' % (what, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError('nhc_checks: %s must be a whole number, got %r' % (what, value)) from None
    if number < minimum or str(number) != str(value).strip():
        raise AnsibleFilterError('nhc_checks: %s must be a whole number >= %d, got %r' % (what, minimum, value))
    return number


def _known_keys(entry, keys, what):
    unknown = sorted(str(key) for key in entry if key not in keys)
    if unknown:
        raise AnsibleFilterError('nhc_checks: %s has unknown keys %s (known: %s)' % (what, ', '.join(unknown), ', '.join(keys)))


def _gpu_lines(topology, settings):
    gpus = [gpu for gpu in topology.get('gpus') or [] if isinstance(gpu, dict)]
    count = settings['gpu_count']
    if count == 'auto':
        # Before the driver, nvidia-smi lists nothing: the PCI view still knows how many GPUs the node has.
        count = len(gpus) or len(topology.get('pci_gpus') or [])
    count = _count(count, 'nhc_gpu_count')
    if count == 0:
        return []
    lines = []
    model = settings['gpu_model']
    if model == 'auto':
        names = {str(gpu.get('name') or '') for gpu in gpus}
        model = names.pop() if len(names) == 1 else ''
    lines.append(['check_trainstack_gpu_count', str(count)] + ([_arg(model, 'nhc_gpu_model')] if model else []))
    driver = settings['driver_version']
    if driver == 'auto':
        versions = {str(gpu.get('driver_version') or '') for gpu in gpus}
        driver = versions.pop() if len(versions) == 1 else ''
    if driver:
        lines.append(['check_trainstack_gpu_driver', _arg(driver, 'nhc_gpu_driver_version')])
    if settings['persistence']:
        lines.append(['check_trainstack_gpu_persistence'])
    fatal = [str(_count(xid, 'nhc_fatal_xids entry', 1)) for xid in settings['fatal_xids']]
    lines.append(['check_trainstack_gpu_xid', str(_count(settings['xid_window'], 'nhc_xid_window', 1))] + ([','.join(fatal)] if fatal else []))
    if settings['memory']:
        lines.append(['check_trainstack_gpu_memory'])
    if settings['pcie']:
        for gpu in gpus:
            width = (gpu.get('pcie') or {}).get('max_link_width')
            if gpu.get('busid') and width:
                # Width only: an idle GPU lowers its link speed to save power, which is no fault.
                lines.append(['check_trainstack_pcie_link', _arg(gpu['busid'], 'GPU bus id'), str(_count(width, 'GPU link width', 1)), '0'])
    links = [int((gpu.get('nvlink') or {}).get('active_links') or 0) for gpu in gpus]
    if settings['nvlink'] and links and min(links) > 0:
        lines.append(['check_trainstack_gpu_nvlink', str(min(links))])
    if settings['fabricmanager'] and topology.get('nvswitch'):
        lines.append(['check_trainstack_fabricmanager'])
    return lines


def _hca_lines(topology, settings):
    hcas = [hca for hca in topology.get('hcas') or [] if isinstance(hca, dict) and hca.get('name')]
    if not settings['ib'] or not hcas:
        return []
    lines = []
    for hca in hcas:
        name = _arg(hca['name'], 'HCA name')
        pcie = hca.get('pcie') or {}
        speed = pcie_speed_gts(pcie.get('max_link_speed'))
        if settings['pcie'] and hca.get('busid') and pcie.get('max_link_width') and speed:
            lines.append(['check_trainstack_pcie_link', _arg(hca['busid'], 'HCA bus id'), str(_count(pcie['max_link_width'], 'HCA link width', 1)),
                          str(speed)])
        for port in hca.get('ports') or []:
            # Only the ports that were up when probed: an uncabled port is not a fault. The probe's rate in Gb/s.
            if port.get('state') == 'ACTIVE' and port.get('speed_mbps'):
                lines.append(['check_trainstack_ib_port', name, str(_count(port.get('port'), 'HCA port', 1)), '%g' % (port['speed_mbps'] / 1000.0)])
    lines.append(['check_trainstack_ib_flaps', str(_count(settings['ib_flap_window'], 'nhc_ib_flap_window', 1)),
                  str(_count(settings['ib_flap_max'], 'nhc_ib_flap_max'))])
    return lines


def _node_lines(settings):
    lines = []
    if settings['munge']:
        lines.append(['check_ps_service', '-u', 'munge', 'munged'])
    if settings['clock_sync']:
        lines.append(['check_trainstack_clock_sync'])
    for mount in settings['mounts']:
        if not isinstance(mount, dict) or not isinstance(mount.get('path'), str) or not mount['path'].startswith('/'):
            raise AnsibleFilterError('nhc_checks: each nhc_mounts entry needs an absolute path, got %r' % (mount,))
        # A misspelt key would drop its check without a word.
        _known_keys(mount, ('path', 'min_free_percent'), 'nhc_mounts entry %s' % mount['path'])
        path = _arg(mount['path'], 'nhc_mounts path')
        lines.append(['check_fs_mount_rw', '-f', path])
        if mount.get('min_free_percent') is not None:
            lines.append(['check_fs_free', path, '%d%%' % _count(mount['min_free_percent'], 'nhc_mounts min_free_percent', 1)])
    for check in settings['extra']:
        if not isinstance(check, dict) or not _CHECK_NAME.match(str(check.get('check', ''))):
            raise AnsibleFilterError('nhc_checks: each nhc_extra_checks entry needs check: a check_<name> function, got %r' % (check,))
        _known_keys(check, ('check', 'args'), 'nhc_extra_checks entry %s' % check['check'])
        args = check.get('args') or []
        if not isinstance(args, list):
            raise AnsibleFilterError('nhc_checks: nhc_extra_checks %s: args must be a list' % check['check'])
        lines.append([check['check']] + [_arg(arg, 'nhc_extra_checks %s argument' % check['check']) for arg in args])
    return lines


def nhc_checks(topology, settings=None):
    """The NHC check lines of a node: a list of [check, argument, ...], arguments ready for nhc.conf.

    topology: the node's trainstack_topology fact; settings: the nhc role's choices (DEFAULTS lists the keys).
    GPU checks come from the GPUs the probe found (none on a node without GPUs), HCA checks from the HCA ports that
    were ACTIVE when probed, then munge, clock, mounts and the inventory's extra checks.
    """
    if topology is not None and not isinstance(topology, dict):
        raise AnsibleFilterError('nhc_checks needs the trainstack_topology dict, got %s' % type(topology).__name__)
    if settings is not None and not isinstance(settings, dict):
        raise AnsibleFilterError('nhc_checks: settings must be a dict, got %s' % type(settings).__name__)
    unknown = sorted(set(settings or {}) - set(DEFAULTS))
    if unknown:
        raise AnsibleFilterError('nhc_checks: unknown settings %s' % ', '.join(unknown))
    merged = dict(DEFAULTS, **(settings or {}))
    topology = topology or {}
    return _gpu_lines(topology, merged) + _hca_lines(topology, merged) + _node_lines(merged)


class FilterModule:
    """NHC filters."""

    def filters(self):
        return {'nhc_checks': nhc_checks}
