# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ask Slurm's own slurmd how it sees a synthetic topology.

slurmd reads its topology through hwloc, and hwloc reads an XML file named by HWLOC_XMLFILE instead of
this machine (HWLOC_THISSYSTEM=1 keeps binding allowed). hwloc's lstopo writes such a file from a
synthetic description. `slurmd -C` prints the node line; `slurmd -G` with SlurmdDebug=debug5 logs
slurmd's CPU map (`debug4: CPU map[<abstract id>]=><OS CPU id> S:C:T s:c:t`): the Slurm core index of
OS CPU n is its abstract id divided by the threads per core.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

SLURMD = shutil.which('slurmd') or ('/usr/sbin/slurmd' if os.path.exists('/usr/sbin/slurmd') else None)
LSTOPO = shutil.which('lstopo-no-graphics') or shutil.which('lstopo')
IN_CI = os.environ.get('CI', '').lower() == 'true'
_MAP_RE = re.compile(r'CPU map\[(\d+)\]=>(\d+) S:C:T (\d+):(\d+):(\d+)')


def scontrol_runner(directory, purpose='this test'):
    """A runner of scontrol without a controller (a minimal slurm.conf in ``directory`` is enough):
    ``run(*args)`` gives the CompletedProcess. Skips without scontrol on a developer machine; in CI a failure."""
    binary = shutil.which('scontrol')
    if binary is None:
        if IN_CI:
            pytest.fail('scontrol is required in CI (install slurm-client) for %s' % purpose)
        pytest.skip('scontrol not installed (apt-get install slurm-client); %s needs it' % purpose)
    conf = os.path.join(str(directory), 'slurm.conf')
    with open(conf, 'w', encoding='utf-8') as handle:
        handle.write('ClusterName=trainstacktest\nSlurmctldHost=localhost\n')
    env = dict(os.environ, SLURM_CONF=conf, LC_ALL='C')
    probe = subprocess.run([binary, 'show', 'hostnames', 'n[1-2]'], env=env, capture_output=True, text=True, check=False)
    if probe.returncode != 0 or probe.stdout.split() != ['n1', 'n2']:
        pytest.fail('scontrol show hostnames does not work here: %s' % (probe.stderr or probe.stdout))
    return lambda *args: subprocess.run([binary] + list(args), env=env, capture_output=True, text=True, check=False)


def require_slurmd():
    """Skip without slurmd/lstopo on a developer machine; in CI (CI=true) their absence is a failure."""
    missing = [name for name, path in (('slurmd', SLURMD), ('lstopo (hwloc)', LSTOPO)) if not path]
    if missing:
        message = '%s not installed (Debian packages slurmd, hwloc; .ci/run and make test install them)' % ', '.join(missing)
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def synthetic_xml(description, destination):
    """hwloc XML of a synthetic topology, e.g. 'pack:2 core:8 pu:2(indexes=...)'."""
    subprocess.run([LSTOPO, '--if', 'synthetic', '--input', description, '--of', 'xml', '--force', destination],
                   check=True, capture_output=True, text=True, timeout=60)
    return destination


def _env(xml):
    env = dict(os.environ)
    env.update(HWLOC_XMLFILE=xml, HWLOC_THISSYSTEM='1')
    return env


def slurmd_C(xml):
    """`slurmd -C` on the topology in xml: its NodeName line."""
    proc = subprocess.run([SLURMD, '-C'], env=_env(xml), capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.splitlines()[0]


def slurmd_cpu_map_log(xml, node_line, gres_lines, workdir):
    """slurmd's own CPU map for the topology: `slurmd -G` under a throw-away slurm.conf at debug5."""
    os.makedirs(os.path.join(workdir, 'spool'), exist_ok=True)
    log = os.path.join(workdir, 'slurmd.log')
    node = node_line.split()[0].split('=', 1)[1]
    with open(os.path.join(workdir, 'slurm.conf'), 'w', encoding='utf-8') as handle:
        handle.write('ClusterName=check\nSlurmctldHost=localhost\nGresTypes=gpu\nSlurmdSpoolDir=%s\n'
                     'SlurmdDebug=debug5\nSlurmdLogFile=%s\n%s\nPartitionName=check Nodes=%s\n'
                     % (os.path.join(workdir, 'spool'), log, node_line, node))
    with open(os.path.join(workdir, 'gres.conf'), 'w', encoding='utf-8') as handle:
        handle.write(''.join(line + '\n' for line in gres_lines))
    env = _env(xml)
    env['SLURM_CONF'] = os.path.join(workdir, 'slurm.conf')
    proc = subprocess.run([SLURMD, '-N', node, '-G'], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, 'slurmd -G failed (%d): %s' % (proc.returncode, proc.stdout + proc.stderr)
    with open(log, encoding='utf-8') as handle:
        return handle.read(), proc.stdout + proc.stderr


def core_index_of_cpu(log_text):
    """{OS CPU id: Slurm core index} from slurmd's `CPU map` debug lines."""
    entries = [tuple(int(n) for n in match.groups()) for match in _MAP_RE.finditer(log_text)]
    if not entries:
        return {}
    threads = max(entry[4] for entry in entries) + 1
    return {os_cpu: abstract // threads for abstract, os_cpu, _s, _c, _t in entries}
