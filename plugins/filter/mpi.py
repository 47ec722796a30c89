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

from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, compress

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


# configure's installation directories: build_artifact installs into the build's own prefix, which it archives and
# ships; any of these would send files elsewhere (over the distribution's libraries, into /etc).
_INSTALL_DIRS = ('--prefix', '--exec-prefix', '--bindir', '--sbindir', '--libexecdir', '--sysconfdir', '--sharedstatedir',
                 '--localstatedir', '--runstatedir', '--libdir', '--includedir', '--oldincludedir', '--datarootdir', '--datadir',
                 '--infodir', '--localedir', '--mandir', '--docdir', '--htmldir', '--dvidir', '--pdfdir', '--psdir')


def _check_extra(extra, owned, variable):
    if not isinstance(extra, (list, tuple)):
        _error('%s must be a list of configure flags' % variable)
    for flag in extra:
        name = str(flag).split('=', 1)[0]
        if name in owned:
            _error('%s may not set %s: the role derives it (see its variables)' % (variable, name))
        # configure takes any unambiguous abbreviation of a long option (--pre for --prefix).
        meant = [option for option in _INSTALL_DIRS if len(name) > 2 and option.startswith(name)]
        if meant:
            _error('%s may not set %s (%s): build_artifact installs into the build\'s own prefix, which it archives and ships'
                   % (variable, name, ', '.join(meant) if name not in meant else 'an installation directory'))
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


def _host_names(hosts):
    """A hostlist where the names allow one (gpu[01-04]), else the names joined (inventory names may be IPs)."""
    try:
        return compress(sorted(hosts))
    except HostlistError:
        return ', '.join(sorted(hosts))


def mpi_group_problems(stacks, group='mpi', variables=None):
    """Messages for every part of the MPI stack on which the hosts of one MPI group disagree.

    stacks: {host: {part: value, ..., 'os': 'Debian 12'}}; every part but `os` must be the same on every host (the
    caller passes what must agree: a full version, or a major such as '4.x'). variables: {part: variable to pin}.
    The ranks of one job load one Open MPI and speak one UCX wire protocol, so a group that would build two
    (a Debian 12 + 13 group gets Open MPI 4.1 and 5.0) fails at the first job; better refused before the build.
    """
    if not isinstance(stacks, dict):
        _error('mpi_group_problems expects a dict {host: {part: version}}')
    variables = variables or {}
    parts = []
    for stack in stacks.values():
        if not isinstance(stack, dict):
            _error('mpi_group_problems expects a dict {host: {part: version}}, got %r' % (stack,))
        parts.extend(part for part in stack if part != 'os' and part not in parts)
    problems = []
    for part in parts:
        hosts_by_value = {}
        for host, stack in stacks.items():
            if part in stack:  # a host without the part (UCX not checked there) is not compared on it
                hosts_by_value.setdefault(str(stack[part]), []).append(str(host))
        if len(hosts_by_value) < 2:
            continue
        shown = []
        for value in sorted(hosts_by_value, key=version_key):
            hosts = hosts_by_value[value]
            systems = sorted({str(stacks[host].get('os', '')) for host in hosts} - {''})
            shown.append('%s on %s%s' % (value or '(none)', _host_names(hosts), ' (%s)' % ', '.join(systems) if systems else ''))
        pin = variables.get(part)
        problems.append('the %s group would get %d %s releases, and the ranks of one job need one: %s. %s' % (
            group, len(hosts_by_value), part, '; '.join(shown),
            ('Pin one release every node can build (%s) or give each OS its own %s group' % (pin, group)) if pin
            else 'Give each OS its own %s group' % group))
    return problems


def version_key(value):
    """Sort key: versions by number, other text after them."""
    numbers = re.findall(r'[0-9]+', str(value))
    return ([int(number) for number in numbers], str(value))


class FilterModule:
    """MPI stack filters."""

    def filters(self):
        return {
            'ucx_configure_flags': ucx_configure_flags,
            'openmpi_configure_flags': openmpi_configure_flags,
            'mpi_stack_conflicts': mpi_stack_conflicts,
            'mpi_group_problems': mpi_group_problems,
            'mpi_cuda_home': mpi_cuda_home,
        }
