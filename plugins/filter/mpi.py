# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MPI stack: configure flags for UCX and Open MPI, and the Open MPI/PMIx/Slurm pairing check (controller side, pure).

Every flag that decides a feature is passed explicitly, never left to configure's guessing: UCX
silently drops CUDA when its guess fails (openucx/ucx#7661), so the choice is always written out.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# Options the callers set through their own variables; extra flags may not override them.
_UCX_OWNED = ('--with-cuda', '--without-cuda', '--with-verbs', '--without-verbs', '--with-rdmacm',
              '--without-rdmacm', '--enable-mt', '--disable-mt', '--prefix')
_OMPI_OWNED = ('--with-ucx', '--without-ucx', '--with-pmix', '--with-slurm', '--without-slurm', '--with-cuda',
               '--without-cuda', '--with-hwloc', '--with-libevent', '--prefix')


def _error(message):
    raise AnsibleFilterError(message)


def version_tuple(value):
    """'4.1.4' -> (4, 1, 4); Debian revisions and suffixes (4.2.2-1+deb12u1, 1.18.1+ds) are dropped."""
    match = re.match(r'^\s*([0-9]+(?:[.][0-9]+)*)', str(value))
    if not match:
        _error('not a version: %r' % (value,))
    return tuple(int(part) for part in match.group(1).split('.'))


def _check_extra(extra, owned, variable):
    if not isinstance(extra, (list, tuple)):
        _error('%s must be a list of configure flags' % variable)
    for flag in extra:
        name = str(flag).split('=', 1)[0]
        if name in owned:
            _error('%s may not set %s: the role derives it (see its variables)' % (variable, name))
    return [str(flag) for flag in extra]


def ucx_configure_flags(options):
    """UCX configure flags from {cuda_home, verbs, mt, extra}: cuda_home '' means --without-cuda."""
    cuda_home = options.get('cuda_home') or ''
    flags = [
        # contrib/configure-release: no logging, debug, assertions or parameter checks in the fast path.
        '--disable-logging', '--disable-debug', '--disable-assertions', '--disable-params-check',
        '--enable-mt' if options.get('mt', True) else '--disable-mt',
        '--with-cuda=%s' % cuda_home if cuda_home else '--without-cuda',
    ]
    if options.get('verbs'):
        flags += ['--with-verbs', '--with-rdmacm']
    else:
        flags += ['--without-verbs', '--without-rdmacm']
    # Not needed on a training cluster; each one left out is build time saved.
    flags += ['--without-java', '--without-go', '--without-knem', '--without-xpmem', '--without-ugni',
              '--without-rocm', '--disable-doxygen-doc', '--disable-backtrace-detail',
              # Shared libraries only: libtool otherwise compiles every source twice (PIC and static).
              '--disable-static']
    return flags + _check_extra(options.get('extra') or [], _UCX_OWNED, 'ucx_configure_extra')


def openmpi_configure_flags(options):
    """Open MPI configure flags from {version, ucx_prefix, pmix_prefix, cuda_home, slurm, extra}."""
    version = version_tuple(options.get('version'))
    if version[:2] not in ((4, 1), (5, 0)):
        _error('openmpi_version %s: the role builds Open MPI 4.1.x and 5.0.x' % options.get('version'))
    for key in ('ucx_prefix', 'pmix_prefix'):
        if not options.get(key):
            _error('openmpi_configure_flags needs %s' % key)
    cuda_home = options.get('cuda_home') or ''
    flags = [
        '--with-ucx=%s' % options['ucx_prefix'],
        # The PMIx Slurm's mpi_pmix plugin uses: one PMIx per node (openpmix/prrte#1982).
        '--with-pmix=%s' % options['pmix_prefix'],
        # An external PMIx wants external hwloc and libevent (the same ones PMIx links).
        '--with-hwloc=external', '--with-libevent=external',
        '--with-cuda=%s' % cuda_home if cuda_home else '--without-cuda',
        '--with-slurm' if options.get('slurm', True) else '--without-slurm',
        # UCX is not in the loader path: without a run path pml/ucx fails to load and Open MPI quietly uses ob1.
        'LDFLAGS=-Wl,-rpath,%s/lib' % options['ucx_prefix'],
        # Trimmed: no Fortran bindings, no OpenSHMEM (also fails with GCC 14, open-mpi/ompi#13103), no ROMIO
        # (MPI-IO stays available through ompio).
        '--disable-mpi-fortran', '--disable-oshmem', '--disable-io-romio',
    ]
    if version[:2] == (4, 1):
        # btl/uct can corrupt data (UCX's Open MPI notes); InfiniBand goes through UCX, not openib.
        flags.append('--enable-mca-no-build=btl-uct,btl-openib')
    else:
        flags.append('--enable-mca-no-build=btl-uct')
    return flags + _check_extra(options.get('extra') or [], _OMPI_OWNED, 'openmpi_configure_extra')


def mpi_cuda_home(cuda):
    """CUDA home from gpu_stack_facts' ``cuda`` entry ({version, nvcc, source}); '' where the host has no CUDA."""
    if not isinstance(cuda, dict) or not cuda.get('version'):
        return ''
    nvcc = cuda.get('nvcc') or ''
    if nvcc.endswith('/bin/nvcc') and nvcc not in ('/usr/bin/nvcc',):
        return nvcc[:-len('/bin/nvcc')]
    source = cuda.get('source') or ''
    if source.endswith('/version.json'):
        return source[:-len('/version.json')]
    # Distribution packages (nvcc in /usr/bin) put CUDA under /usr.
    return '/usr' if nvcc == '/usr/bin/nvcc' else ''


def _matches(rule, versions):
    if 'cuda' in rule and bool(versions.get('cuda')) != bool(rule['cuda']):
        return False
    for key, (name, op) in (('openmpi_min', ('openmpi', 'min')), ('openmpi_below', ('openmpi', 'below')),
                            ('pmix_min', ('pmix', 'min')), ('pmix_below', ('pmix', 'below')),
                            ('slurm_min', ('slurm', 'min')), ('slurm_below', ('slurm', 'below'))):
        if key not in rule:
            continue
        have = versions.get(name)
        if have is None:
            return False
        bound = version_tuple(rule[key])
        if op == 'min' and not have >= bound:
            return False
        if op == 'below' and not have < bound:
            return False
    return True


def mpi_stack_conflicts(stack, matrix, labels=None):
    """Messages for every known-bad pairing in {openmpi_version, pmix_version, slurm_version, cuda} (absent: not checked;
    cuda: whether Open MPI is built with CUDA).

    labels maps those keys to the variable names the messages should show.
    """
    if not isinstance(matrix, dict) or 'pmix_rules' not in matrix:
        _error('the MPI compatibility matrix must be a dict with pmix_rules (data/mpi_compatibility.yml)')
    labels = labels or {}
    versions = {}
    shown = {}
    for name in ('openmpi', 'pmix', 'slurm'):
        key = name + '_version'
        value = stack.get(key)
        if value not in (None, ''):
            if not re.match(r'[0-9]+([.][0-9]+)*', str(value)):
                _error('%s must be a version such as 4.2.2, got %r' % (labels.get(key, key).split(' ')[0], value))
            versions[name] = version_tuple(value)
            shown[name] = '%s %s' % (labels.get(key, key), value)
    versions['cuda'] = bool(stack.get('cuda'))
    shown['cuda'] = '%s (CUDA)' % labels.get('cuda', 'cuda')
    conflicts = []
    if 'openmpi' in versions:
        series = ['%d.%d' % version_tuple(s)[:2] for s in matrix.get('openmpi_series', [])]
        if '%d.%d' % versions['openmpi'][:2] not in series:
            conflicts.append('%s is not a supported Open MPI series (supported: %s)' % (shown['openmpi'], ', '.join(series)))
    for rule in matrix['pmix_rules']:
        if _matches(rule, versions):
            involved = [shown[name] for name in ('openmpi', 'pmix', 'slurm', 'cuda') if any(k.startswith(name) for k in rule)]
            conflicts.append('%s: %s' % (' with '.join(involved), rule['reason']))
    return conflicts


class FilterModule:
    """MPI stack filters."""

    def filters(self):
        return {
            'ucx_configure_flags': ucx_configure_flags,
            'openmpi_configure_flags': openmpi_configure_flags,
            'mpi_stack_conflicts': mpi_stack_conflicts,
            'mpi_cuda_home': mpi_cuda_home,
        }
