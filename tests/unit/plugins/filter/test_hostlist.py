# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hostlist_expand / hostlist_compress: recorded Slurm behaviour plus a differential test against scontrol."""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.hostlist import FilterModule, hostlist_compress, hostlist_expand
from ansible_collections.trainstack.cluster.plugins.module_utils import _hostlist
from ansible_collections.trainstack.cluster.plugins.module_utils._hostlist import HostlistError, compress, expand
from slurmd_support import scontrol_runner

# (expression, what `scontrol show hostnames` printed, what `scontrol show hostlist` printed),
# recorded with Slurm 22.05.8 (Debian 12 slurm-client).
SLURM_CASES = [
    ('node[001-010]', ['node%03d' % i for i in range(1, 11)], 'node[001-010]'),
    ('gpu[01-04,07],cpu[1-3]', ['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu07', 'cpu1', 'cpu2', 'cpu3'], 'gpu[01-04,07],cpu[1-3]'),
    ('n[1-3,5-7,9]', ['n1', 'n2', 'n3', 'n5', 'n6', 'n7', 'n9'], 'n[1-3,5-7,9]'),
    ('n[010-012]', ['n010', 'n011', 'n012'], 'n[010-012]'),
    # width of a range = length of its lower bound as written
    ('n[9-11]', ['n9', 'n10', 'n11'], 'n[9-11]'),
    ('n[09-11]', ['n09', 'n10', 'n11'], 'n[09-11]'),
    ('n[8-012]', ['n8', 'n9', 'n10', 'n11', 'n12'], 'n[8-12]'),
    ('n[01-1]', ['n01'], 'n01'),
    ('n[1-01]', ['n1'], 'n1'),
    ('n[0-0]', ['n0'], 'n0'),
    ('n[1-]', ['n1'], 'n1'),
    # strtoul quirks in the lower bound: white space, '+' and junk before '-' count in the width
    ('n[+1-3]', ['n01', 'n02', 'n03'], 'n[01-03]'),
    ('n[1a-3]', ['n01', 'n02', 'n03'], 'n[01-03]'),
    ('n[ 1]', ['n01'], 'n01'),
    ('n[1 - 3]', ['n01', 'n02', 'n03'], 'n[01-03]'),
    ('n[1-+3]', ['n1', 'n2', 'n3'], 'n[1-3]'),
    # no sorting, no de-duplication; merging only with the range just before
    ('n3,n2,n1', ['n3', 'n2', 'n1'], 'n[3,2,1]'),
    ('n1,n1', ['n1', 'n1'], 'n[1,1]'),
    ('a,b,a', ['a', 'b', 'a'], 'a,b,a'),
    ('n[1-3],n[2-4]', ['n1', 'n2', 'n3', 'n2', 'n3', 'n4'], 'n[1-3,2-4]'),
    ('n[2],n[1]', ['n2', 'n1'], 'n[2,1]'),
    ('n[1-2],n[3-4]', ['n1', 'n2', 'n3', 'n4'], 'n[1-4]'),
    ('n1,n2,n3,n5', ['n1', 'n2', 'n3', 'n5'], 'n[1-3,5]'),
    ('a1,b1,a2', ['a1', 'b1', 'a2'], 'a1,b1,a2'),
    ('n[7],n[8-9],m[1],m2', ['n7', 'n8', 'n9', 'm1', 'm2'], 'n[7-9],m[1-2]'),
    # mixed widths
    ('n1,n01', ['n1', 'n01'], 'n[1,01]'),
    ('n01,n1', ['n01', 'n1'], 'n[01,1]'),
    ('n001,n02,n3', ['n001', 'n02', 'n3'], 'n[001,02,3]'),
    ('n9,n10', ['n9', 'n10'], 'n[9-10]'),
    ('n09,n10', ['n09', 'n10'], 'n[09-10]'),
    ('n99,n100', ['n99', 'n100'], 'n[99-100]'),
    ('n099,n100', ['n099', 'n100'], 'n[099-100]'),
    ('n9,n010', ['n9', 'n010'], 'n[9,010]'),
    ('n8,n[09-10]', ['n8', 'n09', 'n10'], 'n[8,09-10]'),
    ('n[9-10],n011', ['n9', 'n10', 'n011'], 'n[9-10,011]'),
    ('n2,n[03-04]', ['n2', 'n03', 'n04'], 'n[2,03-04]'),
    ('n01,n02,n3,n04', ['n01', 'n02', 'n3', 'n04'], 'n[01-02,3,04]'),
    ('n0,n00,n000', ['n0', 'n00', 'n000'], 'n[0,00,000]'),
    ('n00,n0,n01', ['n00', 'n0', 'n01'], 'n[00,0,01]'),
    # names without a number, numbers after non-digits
    ('x1y', ['x1y'], 'x1y'),
    ('x1y2', ['x1y2'], 'x1y2'),
    ('n,n1', ['n', 'n1'], 'n,n1'),
    ('n1,n', ['n1', 'n'], 'n1,n'),
    ('n1,n2,n', ['n1', 'n2', 'n'], 'n[1-2],n'),
    ('n1x,n2x', ['n1x', 'n2x'], 'n1x,n2x'),
    ('gpu1-ib,gpu2-ib', ['gpu1-ib', 'gpu2-ib'], 'gpu1-ib,gpu2-ib'),
    ('n-1,n-2', ['n-1', 'n-2'], 'n-[1-2]'),
    ('n1.1,n1.2', ['n1.1', 'n1.2'], 'n1.[1-2]'),
    ('a.b1,a.b2', ['a.b1', 'a.b2'], 'a.b[1-2]'),
    ('node-01.example.com', ['node-01.example.com'], 'node-01.example.com'),
    ('123', ['123'], '123'),
    ('1,2,3', ['1', '2', '3'], '[1-3]'),
    ('[1-3]', ['1', '2', '3'], '[1-3]'),
    # several brackets: a product, the last bracket innermost, the others walked from the right
    ('n[1-2]x[3-4]', ['n1x3', 'n1x4', 'n2x3', 'n2x4'], 'n1x[3-4],n2x[3-4]'),
    ('n[1-3][4]', ['n14', 'n24', 'n34'], 'n14,n24,n34'),
    ('a[1-2]b[3-4]c[5-6]', ['a1b3c5', 'a1b3c6', 'a2b3c5', 'a2b3c6', 'a1b4c5', 'a1b4c6', 'a2b4c5', 'a2b4c6'],
     'a1b3c[5-6],a2b3c[5-6],a1b4c[5-6],a2b4c[5-6]'),
    ('a[1]b[2]c[3]d[4]', ['a1b2c3d4'], 'a1b2c3d4'),
    # separators: comma, space, tab; empty names skipped
    ('n1 n2', ['n1', 'n2'], 'n[1-2]'),
    ('n1\tn2', ['n1', 'n2'], 'n[1-2]'),
    ('n[1-3] n[5]', ['n1', 'n2', 'n3', 'n5'], 'n[1-3,5]'),
    ('n[1-3],', ['n1', 'n2', 'n3'], 'n[1-3]'),
    (',n1,,n2,', ['n1', 'n2'], 'n[1-2]'),
    # range limit: 65536 hosts
    ('n[1-65536]', ['n%d' % i for i in range(1, 65537)], 'n[1-65536]'),
]

# Rejected by Slurm too ("Invalid hostlist"), with the start of our message.
SLURM_ERRORS = [
    ('n[5-3]', 'reversed range'),
    ('n[]', 'empty element'),
    ('n[,]', 'empty element'),
    ('n[1,,2]', 'empty element'),
    ('n[-1]', 'does not start with a number'),
    ('n[a-b]', 'does not start with a number'),
    ('n[1x]', "'x' is not allowed"),
    ('n[1--3]', 'negative numbers'),
    ('n[1- -3]', 'more than 65536 hosts'),
    ('n[1-3a]', 'is not a number'),
    ('n[1 ]', 'is not a number'),
    ('n[0-65536]', 'more than 65536 hosts'),
    ('n[1-70000]', 'more than 65536 hosts'),
    ('a[1-40000,1-25537]b[1]', 'more than 65536 hosts in bracket'),
    ('n[1-3]-ib', "text after the last ']'"),
    ('a[1-2]b', "text after the last ']'"),
    ('n[1-3]]', "unbalanced ']'"),
    ('n[[1-3]]', "nested '['"),
]

# Accepted by Slurm in surprising ways, refused here on purpose.
STRICTER_THAN_SLURM = [
    ('n[1-3', "unbalanced '['"),          # Slurm: the host 'n]'
    ('[1-3', "unbalanced '['"),           # Slurm: the host '1-3'
    ('n]', "unbalanced ']'"),             # Slurm: the host 'n]'
    ('a[b[1-2]', "nested '['"),           # Slurm: 'a[b1', 'a[b2'
    ('a[y]b[1]c[2]', 'does not start with a number'),  # Slurm: silently nothing
    ('', 'empty'),                        # Slurm: nothing
    ('  ', 'empty'),
    (',', 'empty'),
    ('n99999999999999999999999', 'too large'),     # Slurm saturates: n00018446744073709551615
    ('n18446744073709551615', 'too large'),        # Slurm wraps when a host follows
    # names that are not host names: Slurm takes them as node names, a command line or conf file must not
    ('gpu01;reboot', "invalid host name 'gpu01;reboot': ';' is not allowed"),
    ('gpu01,a$(id)', "invalid host name 'a$(id)': '$' is not allowed"),
    ('n`id`1', "'`' is not allowed"),
    ('n|x', "'|' is not allowed"),
    ('n&1', "'&' is not allowed"),
    ('n>1', "'>' is not allowed"),
    ("n'1", '"\'" is not allowed'),
    ('n"1', "'\"' is not allowed"),
    ('n\\1', "is not allowed"),
    ('n*', "'*' is not allowed"),
    ('n/1', "'/' is not allowed"),
    ('n:1', "':' is not allowed"),
    ('n=1', "'=' is not allowed"),
    ('gpü01', "'ü' is not allowed"),
    ('n[1-2]$x[1]', "invalid host name 'n1$x1': '$' is not allowed"),
    ('$x[1-3]', "invalid host name '$x1': '$' is not allowed"),
    ('gpu01\n', "invalid host name 'gpu01\\n': a newline is not allowed"),
    ('gpu\r01', 'a carriage return is not allowed'),
    ('n\x00', 'the control character'),
    ('-n1', "must not start with '-'"),
    ('n1,-x', "invalid host name '-x': a host name must not start with '-'"),
    ('.n1', "must not start with '.'"),
    # A name past DNS's 253 characters (a survey answer of 100,000 letters passed before).
    ('g' * 100000, "invalid host name 'gggggggggggggggggggg'...: longer than 253 characters"),
    ('g' * 250 + '[1-1000]', "invalid host name 'gggggggggggggggggggg'...: longer than 253 characters"),
]


@pytest.mark.parametrize('expr, names, ranged', SLURM_CASES, ids=[repr(case[0])[:40] for case in SLURM_CASES])
def test_matches_recorded_slurm(expr, names, ranged):
    assert expand(expr) == names
    assert compress(expr) == ranged
    assert hostlist_expand(expr) == names
    assert hostlist_compress(expr) == ranged


@pytest.mark.parametrize('expr, names, ranged', [case for case in SLURM_CASES if len(case[1]) < 100],
                         ids=[repr(case[0])[:40] for case in SLURM_CASES if len(case[1]) < 100])
def test_compress_of_the_expanded_names_expands_back(expr, names, ranged):
    compressed = hostlist_compress(names)
    assert hostlist_expand(compressed) == names


@pytest.mark.parametrize('expr, message', SLURM_ERRORS + STRICTER_THAN_SLURM, ids=[repr(case[0]) for case in SLURM_ERRORS + STRICTER_THAN_SLURM])
def test_invalid_input_raises(expr, message):
    with pytest.raises(HostlistError, match=None) as exc_info:
        expand(expr)
    assert message in str(exc_info.value)
    with pytest.raises(AnsibleFilterError, match='^hostlist_expand: '):
        hostlist_expand(expr)
    with pytest.raises(AnsibleFilterError, match='^hostlist_compress: '):
        hostlist_compress([expr])


@pytest.mark.parametrize('value, expected', [
    (['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu07', 'cpu1', 'cpu2', 'cpu3'], 'gpu[01-04,07],cpu[1-3]'),
    (['n[1-2]', 'n3', 'n[4-5],m1'], 'n[1-5],m1'),
    (('n1', 'n2'), 'n[1-2]'),
    ([], ''),
])
def test_compress_lists(value, expected):
    assert hostlist_compress(value) == expected


@pytest.mark.parametrize('expr, names', [
    ('gpu_01,gpu_02', ['gpu_01', 'gpu_02']),
    ('node-01.example.com,n.1', ['node-01.example.com', 'n.1']),
    ('n-[1-2]', ['n-1', 'n-2']),
    ('[1-2]', ['1', '2']),
    ('10.0.0.[1-2]', ['10.0.0.1', '10.0.0.2']),
    ('N1,n_A-b.c', ['N1', 'n_A-b.c']),
])
def test_plain_host_names_pass(expr, names):
    assert expand(expr) == names
    assert hostlist_expand(expr) == names


@pytest.mark.parametrize('expr, names, ranged', [
    # prefix comparison is strnatcmp (white space ignored): the second host takes the first prefix
    ('a\n1,a2', ['a\n1', 'a\n2'], 'a\n[1-2]'),
    ('gpu01;reboot', ['gpu01;reboot'], 'gpu01;reboot'),
    ('n$[1-2]', ['n$1', 'n$2'], 'n$[1-2]'),
    ('-n[1-2]', ['-n1', '-n2'], '-n[1-2]'),
])
def test_slurm_names_without_the_host_name_check(expr, names, ranged):
    # recorded with Slurm 22.05.8 like SLURM_CASES; check_names=False is Slurm's own behaviour
    assert expand(expr, check_names=False) == names
    assert compress(expr, check_names=False) == ranged
    with pytest.raises(HostlistError, match='invalid host name'):
        expand(expr)
    with pytest.raises(HostlistError, match='invalid host name'):
        compress(names)


def test_items_are_parsed_one_by_one():
    # joined with ',' this would be the valid 'n[1,2]'; each item alone is unbalanced
    with pytest.raises(AnsibleFilterError, match='unbalanced'):
        hostlist_compress(['n[1', '2]'])


@pytest.mark.parametrize('value, expected', [
    (['n[1-2]', 'm[1-2]'], ['n1', 'n2', 'm1', 'm2']),
    ([], []),
])
def test_expand_lists(value, expected):
    assert hostlist_expand(value) == expected


@pytest.mark.parametrize('bad', [None, 5, {'a': 1}, ['n1', 5], ['n1', None]])
def test_wrong_types_raise_filter_errors(bad):
    with pytest.raises(AnsibleFilterError):
        hostlist_expand(bad)
    with pytest.raises(AnsibleFilterError):
        hostlist_compress(bad)


def test_filter_module_exports_both_filters():
    assert set(FilterModule().filters()) == {'hostlist_expand', 'hostlist_compress'}


def test_module_utils_imports_without_ansible():
    source = open(_hostlist.__file__, encoding='utf-8').read()
    assert 'import ansible' not in source and 'from ansible' not in source


# ---------------------------------------------------------------------------------------------
# Differential test against Slurm's own scontrol.

DIFF_SEED = 20260101
DIFF_CASES = 2000
PREFIXES = ['n', 'gpu', 'node-', 'cn', 'a.b', 'x1y', 'r1n', 'rack2-n', '', 'c-', 'tn0', 'login', 'gpu-a100-']
NAMES_WITHOUT_NUMBER = ['login', 'head-a', 'gpu1-ib', 'mgmt.x', 'n1.b']


def _number(rng):
    if rng.random() < 0.5:
        return rng.choice([0, 1, 7, 8, 9, 10, 11, 98, 99, 100, 101, 999, 1000, 1001, 9999, 10000])
    return rng.randint(0, 2000)


def _written(rng, num):
    """A number as a user might write it: natural width or zero padded."""
    if rng.random() < 0.5:
        return str(num)
    return str(num).zfill(rng.randint(1, 6))


def _bracket(rng):
    parts = []
    for dummy in range(rng.randint(1, 4)):
        lo = _number(rng)
        if rng.random() < 0.4:
            parts.append(_written(rng, lo))
        else:
            hi = lo + rng.randint(0, 12)
            parts.append('%s-%s' % (_written(rng, lo), _written(rng, hi)))
    return '[%s]' % ','.join(parts)


def _item(rng, previous):
    roll = rng.random()
    if previous and roll < 0.15:
        return rng.choice(previous)                      # duplicates
    if previous and roll < 0.40:                         # the next number after a previous name
        base = rng.choice(previous)
        stripped = base.rstrip('0123456789')
        if stripped != base and '[' not in base:
            digits = base[len(stripped):]
            nxt = int(digits) + rng.choice([1, 1, 1, 2, -1])
            if nxt >= 0:
                return stripped + (str(nxt).zfill(len(digits)) if rng.random() < 0.7 else str(nxt))
    if roll < 0.45:
        return rng.choice(NAMES_WITHOUT_NUMBER)
    prefix = rng.choice(PREFIXES)
    if roll < 0.70:
        return prefix + _written(rng, _number(rng))
    if roll < 0.95:
        return prefix + _bracket(rng)
    return 'r' + _bracket(rng) + rng.choice(['n', '-n', 'x']) + _bracket(rng)   # product of brackets


def random_expressions(seed=DIFF_SEED, count=DIFF_CASES):
    rng = random.Random(seed)
    for dummy in range(count):
        items = []
        for dummy in range(rng.randint(1, 25)):
            items.append(_item(rng, items))
        separators = [rng.choice([',', ',', ',', ' ', '\t', ',,', ', ']) for dummy in items]
        yield ''.join(item + sep for item, sep in zip(items, separators)).rstrip(', \t')


@pytest.fixture(scope='module')
def scontrol(tmp_path_factory):
    """Runs scontrol without a controller."""
    return scontrol_runner(tmp_path_factory.mktemp('slurm'), 'the differential hostlist test')


def _slurm(scontrol, expr):
    names = scontrol('show', 'hostnames', expr)
    ranged = scontrol('show', 'hostlist', expr)
    assert names.returncode == 0 and ranged.returncode == 0, (expr, names.stdout, names.stderr)
    expanded = names.stdout.split('\n')[:-1]
    recompressed = scontrol('show', 'hostlist', ','.join(expanded)).stdout.rstrip('\n') if expanded else ''
    return expanded, ranged.stdout.rstrip('\n'), recompressed


def test_random_expressions_are_generated_deterministically():
    first = list(random_expressions(count=50))
    assert first == list(random_expressions(count=50))
    assert any('[' in expr for expr in first) and any(' ' in expr for expr in first)


def test_differential_against_scontrol(scontrol):
    expressions = list(random_expressions())
    with ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) as pool:
        slurm_results = list(pool.map(lambda expr: _slurm(scontrol, expr), expressions))
    mismatches = []
    hosts = 0
    for expr, (slurm_names, slurm_ranged, slurm_recompressed) in zip(expressions, slurm_results):
        names = expand(expr)
        hosts += len(names)
        mine = (names, compress(expr), compress(names))
        if mine != (slurm_names, slurm_ranged, slurm_recompressed):
            mismatches.append((expr, mine, (slurm_names, slurm_ranged, slurm_recompressed)))
    assert not mismatches, 'differs from scontrol in %d of %d lists, first: %r' % (len(mismatches), len(expressions), mismatches[:3])
    assert hosts > 10 * len(expressions)


@pytest.mark.parametrize('expr, names, ranged', [case for case in SLURM_CASES if len(case[1]) < 100 and '\n' not in case[0]],
                         ids=[repr(case[0])[:40] for case in SLURM_CASES if len(case[1]) < 100 and '\n' not in case[0]])
def test_recorded_cases_still_match_scontrol(scontrol, expr, names, ranged):
    assert _slurm(scontrol, expr)[:2] == (names, ranged)
