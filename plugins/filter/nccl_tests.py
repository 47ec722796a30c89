# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests build settings for the nccl_tests role (controller side, pure).

nccl-tests compiles every kernel once per -gencode pair; upstream's default list covers five to eight
architectures. Building only the compute capabilities the group's GPUs have keeps the compile short
and the binaries exact.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# '9.0' (nvidia-smi, topology_facts), '90', 'sm_90', 'sm_90a', 'compute_90', '10.0', '12.0'.
_CAPABILITY = re.compile(r'^(?:(?:sm|compute)_)?([0-9]{1,3})(?:[.]([0-9]))?([a-z]?)\Z')
_MAKE_NAME = re.compile(r'^[A-Z_][A-Z0-9_]*\Z')
# Make variables the role derives; nccl_tests_make_extra may not set them.
_OWNED = ('MPI', 'MPI_HOME', 'CUDA_HOME', 'NCCL_HOME', 'NVCC_GENCODE', 'BUILDDIR', 'PREFIX')


def _error(message):
    raise AnsibleFilterError(message)


def _sm(value, variable='nccl_tests_gencode'):
    """'9.0' -> '90', 'sm_90a' -> '90a', '80' -> '80', '10.0' -> '100'."""
    text = str(value).strip().lower()
    match = _CAPABILITY.match(text)
    if not match:
        _error('%s: not a compute capability or sm_XY architecture: %r' % (variable, value))
    major, minor, suffix = match.group(1), match.group(2), match.group(3)
    if minor is not None:
        return '%s%s%s' % (major, minor, suffix)
    if len(major) < 2:
        _error('%s: not a compute capability or sm_XY architecture: %r (write 8.0 or sm_80)' % (variable, value))
    return major + suffix


def _sm_key(sm):
    digits = re.match(r'^[0-9]+', sm).group(0)
    return (int(digits), sm)


def nccl_tests_gencode(capabilities, variable='nccl_tests_gencode'):
    """NVCC_GENCODE for the given compute capabilities: one -gencode=arch=compute_XY,code=sm_XY each, sorted, unique.

    capabilities: list of '9.0' / '90' / 'sm_90' strings (the GPUs of the build group, or an inventory list).
    An empty list is refused: without a GPU or an override there is nothing to build for.
    """
    if isinstance(capabilities, str) or not isinstance(capabilities, (list, tuple)):
        _error('%s must be a list of compute capabilities (such as 9.0 or sm_90), got %r' % (variable, capabilities))
    sms = sorted({_sm(value, variable) for value in capabilities if str(value).strip()}, key=_sm_key)
    if not sms:
        _error('%s: no GPU compute capability to build for (the probe found no GPU in the group and '
               '%s is empty): set it, e.g. [sm_90]' % (variable, variable))
    return ' '.join('-gencode=arch=compute_%s,code=sm_%s' % (sm, sm) for sm in sms)


def nccl_tests_make_args(options):
    """make NAME=value arguments from {cuda_home, nccl_home, mpi_home, gencode, extra}.

    mpi_home '' builds MPI=0. Every value is one argument: the build script quotes each.
    """
    if not isinstance(options, dict):
        _error('nccl_tests_make_args expects a dict')
    cuda_home = str(options.get('cuda_home') or '')
    nccl_home = str(options.get('nccl_home') or '')
    mpi_home = str(options.get('mpi_home') or '')
    gencode = str(options.get('gencode') or '')
    for name, value in (('cuda_home', cuda_home), ('nccl_home', nccl_home)):
        if not value.startswith('/'):
            _error('nccl_tests_make_args needs %s as an absolute path, got %r' % (name, value))
    if mpi_home and not mpi_home.startswith('/'):
        _error('nccl_tests_make_args: mpi_home must be an absolute path or empty, got %r' % (mpi_home,))
    if not gencode:
        _error('nccl_tests_make_args needs gencode')
    args = ['CUDA_HOME=%s' % cuda_home, 'NCCL_HOME=%s' % nccl_home, 'NVCC_GENCODE=%s' % gencode]
    args += ['MPI=1', 'MPI_HOME=%s' % mpi_home] if mpi_home else ['MPI=0']
    extra = options.get('extra') or []
    if isinstance(extra, str) or not isinstance(extra, (list, tuple)):
        _error('nccl_tests_make_extra must be a list of NAME=value')
    for arg in extra:
        name = str(arg).split('=', 1)[0]
        if '=' not in str(arg) or not _MAKE_NAME.match(name):
            _error('nccl_tests_make_extra entries must be NAME=value, got %r' % (arg,))
        if name in _OWNED:
            _error('nccl_tests_make_extra may not set %s: the role derives it (see its variables)' % name)
    return args + [str(arg) for arg in extra]


class FilterModule:
    """nccl-tests filters."""

    def filters(self):
        return {
            'nccl_tests_gencode': nccl_tests_gencode,
            'nccl_tests_make_args': nccl_tests_make_args,
        }
