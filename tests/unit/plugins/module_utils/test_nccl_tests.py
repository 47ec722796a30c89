# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests outputs collected from public sources (tests/unit/fixtures/nccl_tests/README.md)."""

from __future__ import annotations

import pytest

from corpus_support import cases, check

from ansible_collections.trainstack.cluster.plugins.module_utils._nccl_tests import NcclTestsParseError, parse

HEADER = ('#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n')


@pytest.mark.parametrize('text, expected', cases('nccl_tests'))
def test_corpus(text, expected):
    check(parse, NcclTestsParseError, text, expected)


def test_wrong_results_and_failed_bounds_are_reported():
    result = parse(HEADER + '  1048576  262144  float  sum  -1  339.61  3.09  3.09  7  335.85  3.12  3.12  0\n'
                   '# Out of bounds values : 248 FAILED\n# Avg bus bandwidth    : 3.1\n')
    assert result['rows'][0]['out_of_place']['wrong'] == 7
    assert result['out_of_bounds'] == 248 and result['out_of_bounds_ok'] is False


@pytest.mark.parametrize('row, words', [
    ('  1048576  262144  float  sum  -1  339.61  3.09  3.O9  0  335.85  3.12  3.12  0', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  1.2.3  0  335.85  3.12  3.12  0', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  1e+0x  0  335.85  3.12  3.12  0', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  3,09  0  335.85  3.12  3.12  0', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  3.09  0.5  335.85  3.12  3.12  0', 'whole number'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  3.09  0  335.85  3.12  3.12  0[0]', 'where a number belongs'),
    ('  1048576  262144  float  sum  -1  339.61  3.09  3.09  0  335.85  3.12  3.12  0  extra', 'columns'),
    ('  1048576  262144  float  sum  x  339.61  3.09  3.09  0  335.85  3.12  3.12  0', 'root'),
    ('  1048576  262144  float  sum  -1  339.61  -3.09  3.09  0  335.85  3.12  3.12  0', 'where a number belongs'),
])
def test_hostile_rows_give_an_error_never_a_number(row, words):
    with pytest.raises(NcclTestsParseError) as raised:
        parse(HEADER + row + '\n')
    assert words in str(raised.value)


def test_text_that_is_not_nccl_tests_is_refused():
    with pytest.raises(NcclTestsParseError):
        parse('size_MiB=1 time_us=47.4 algbw_GBs=22.1 busbw_GBs=22.1\n')


# The number forms printf gives in nccl-tests' columns (src/util.cu getFloatStr: %.2f, %.1f, %.0f, then %.1e / %.0e
# when the figure is too wide; #wrong with %g), read by hand: the cell and the value it must become.
@pytest.mark.parametrize('cell, value', [
    ('1e+06', 1000000.0), ('2e+06', 2000000.0), ('3e+06', 3000000.0), ('1.5e+07', 15000000.0),
    ('1.5e-05', 0.000015), ('7e+01', 70.0), ('0', 0.0), ('12345', 12345.0), ('0.00', 0.0), ('476.3', 476.3),
    ('1E+06', 1000000.0), ('.5', 0.5),
])
def test_printf_number_forms_of_the_bandwidth_and_time_columns(cell, value):
    result = parse(HEADER + '  4294967296  1073741824  float  sum  -1  %s  %s  %s  0  %s  %s  %s  0\n' % ((cell,) * 6)
                   + '# Avg bus bandwidth    : 1e+06\n')
    for half in ('out_of_place', 'in_place'):
        assert result['rows'][0][half]['time_us'] == pytest.approx(value)
        assert result['rows'][0][half]['algbw'] == pytest.approx(value)
        assert result['rows'][0][half]['busbw'] == pytest.approx(value)
    assert result['avg_busbw'] == 1000000.0 and result['complete'] and result['nonfinite'] == []


@pytest.mark.parametrize('cell', ['inf', '-inf', 'nan', '-nan', 'INF', 'NaN'])
def test_printf_inf_and_nan_are_kept_as_none_and_listed(cell):
    # A zero time makes algbw inf; C's printf writes it as inf/nan: never a figure to judge.
    result = parse(HEADER + '  1048576  262144  float  sum  -1  0.00  %s  %s  0  335.85  3.12  3.12  0\n' % (cell, cell)
                   + '# Avg bus bandwidth    : %s\n' % cell)
    row = result['rows'][0]
    assert row['out_of_place']['algbw'] is None and row['out_of_place']['busbw'] is None
    assert row['in_place']['busbw'] == 3.12
    assert result['avg_busbw'] is None
    assert result['nonfinite'] == ['size 1048576 out-of-place algbw %s' % cell, 'size 1048576 out-of-place busbw %s' % cell,
                                   'Avg bus bandwidth %s' % cell]


def test_wrong_count_printed_with_g_is_a_whole_number():
    result = parse(HEADER + '  4294967296  1073741824  float  sum  -1  32336  132.82  232.44  1e+06  32455  132.34  231.59  0\n')
    assert result['rows'][0]['out_of_place']['wrong'] == 1000000
    assert result['rows'][0]['in_place']['wrong'] == 0


# Layouts of earlier and later releases, written from the printf formats of their src/common.cu / src/util.cu
# (the mirror's git bundle, tags v1.0.0, v2.0.0, v2.13.0, v2.18.0, v2.19.6), with hand-picked figures.
V1_0 = """# NCCL Tests compiled with NCCL 2.1
# Using devices
#   Rank  0 on    node-a device  0 [0x06] Tesla P100-SXM2-16GB
#   Rank  1 on    node-a device  1 [0x07] Tesla P100-SXM2-16GB

#                                       out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
     1048576        262144   float     sum    0.120   8.74   8.74    0e+00    0.118   8.89   8.89    0e+00
    33554432       8388608   float     sum    2.500  13.42  13.42    1e-07    2.480  13.53  13.53    1e-07
 Out of bounds values : 0 OK
 Avg bus bandwidth    : 11.145
"""

V2_0 = """#   Rank  0 Pid  12345 on    node-b device  0 [0x00] Tesla V100-SXM2-16GB
#   Rank  1 Pid  12345 on    node-b device  1 [0x00] Tesla V100-SXM2-16GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    45.10   23.25   23.25  0e+00    44.90   23.35   23.35  0e+00
   134217728      33554432   float     sum   1890.4   71.00   71.00  2e-07   1888.0   71.09   71.09  2e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 47.17
"""

V2_19_PER_ITERATION_TIMESTAMPS = (
    '# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n'
    '# Collective test starting: all_reduce_perf\n'
    '# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4294967296 step: 4(factor) warmup iters: 1 iters: 20 agg iters: 1'
    ' validation: 1 graph: 0 unalign: 0\n'
    '# Per-Iteration Report: CUDA event timing; i_* uses max over process rows\n'
    '#\n'
    '# Using devices\n'
    '#  Rank  0 Group  0 Pid   4242 on   gpu-host device  0 [0000:18:00] NVIDIA H200\n'
    '#\n'
    '#                                                              out-of-place (+ per-iteration)'
    '                                in-place (+ per-iteration)\n'
    '#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%'
    '     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp\n'
    '#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)'
    '     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S\n'
    '     1048576        262144     float     sum      -1    6.10  171.90    0.00       0     5.90     7.20     7.20     4.10'
    '     2.05  511.50    0.00       0     2.00     2.30     2.30     2.50  2026-07-09 12:00:01\n'
    '  4294967296    1073741824     float     sum      -1  1.5e+07    0.29    0.00       0  1.4e+07  1.6e+07  1.6e+07     0.80'
    '     2.10  2e+06    0.00       0     2.00     2.40     2.40     3.00  2026-07-09 12:00:09\n'
    '# Out of bounds values : 0 OK\n'
    '# Avg bus bandwidth    : 0\n'
    '#\n'
    '# Collective test concluded: all_reduce_perf\n')

V2_19_CPUTIME = """# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1   12.40   84.56  147.99       0   12.10   86.66  151.65       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 149.82
"""


def test_v1_layout_times_in_ms_and_deviation_column():
    result = parse(V1_0)
    assert result['nranks'] == 2 and result['gpu_names'] == ['Tesla P100-SXM2-16GB'] and result['complete']
    first, second = result['rows']
    assert first['bytes'] == 1048576 and first['redop'] == 'sum'
    assert first['out_of_place']['time_us'] == pytest.approx(120.0)  # 0.120 ms
    assert second['in_place']['busbw'] == 13.53
    assert second['out_of_place']['max_error'] == pytest.approx(1e-07) and second['out_of_place']['wrong'] is None
    assert result['avg_busbw'] == pytest.approx(11.145) and result['out_of_bounds_ok'] is True


def test_v2_0_to_v2_12_error_column_is_a_deviation_not_a_count():
    result = parse(V2_0)
    assert [row['bytes'] for row in result['rows']] == [1048576, 134217728]
    assert result['rows'][1]['out_of_place']['time_us'] == pytest.approx(1890.4)
    assert result['rows'][1]['in_place']['max_error'] == pytest.approx(2e-07)
    assert result['rows'][0]['out_of_place']['wrong'] is None
    # Pasted into Markdown (nccl issue #583), the header lines lost their '#': the same table.
    pasted = parse(V2_0.replace('#       size', '        size').replace('#        (B)', '         (B)'))
    assert pasted['rows'] == result['rows']


def test_v2_19_per_iteration_columns_and_timestamps():
    result = parse(V2_19_PER_ITERATION_TIMESTAMPS)
    assert result['version'] == '2.19.6' and result['collective'] == 'all_reduce_perf' and result['complete']
    first, last = result['rows']
    assert first['in_place']['algbw'] == 511.5 and first['out_of_place']['i_cv_pct'] == pytest.approx(4.1)
    # A 15 s iteration no longer fits %7.1f: getFloatStr prints it as %.1e.
    assert last['out_of_place']['time_us'] == 15000000.0 and last['in_place']['algbw'] == 2000000.0
    assert last['out_of_place']['i_max_us'] == 16000000.0 and last['timestamp'] == '2026-07-09 12:00:09'
    assert result['avg_busbw'] == 0.0


def test_v2_19_cputime_column_is_the_time():
    result = parse(V2_19_CPUTIME)
    assert result['rows'][0]['out_of_place']['time_us'] == pytest.approx(12.4)
    assert result['rows'][0]['in_place']['busbw'] == pytest.approx(151.65)


def test_open_mpi_tag_output_prefixes_are_removed():
    lines = (HEADER.rstrip('\n'), '  1048576  262144  float  sum  -1  339.61  3.09  3.09  0  335.85  3.12  3.12  0',
             '# Avg bus bandwidth    : 3.1')
    text = ''.join('[1,0]<stdout>:' + line + '\n' for line in lines)
    result = parse(text)
    assert result['rows'][0]['out_of_place']['busbw'] == 3.09 and result['complete']


def test_a_table_without_rows_is_an_error_that_says_so():
    with pytest.raises(NcclTestsParseError) as raised:
        parse(HEADER + '# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n')
    assert 'no result row' in str(raised.value)


def test_a_run_cut_before_its_closing_lines_is_not_complete():
    result = parse(HEADER + '  1048576  262144  float  sum  -1  339.61  3.09  3.09  0  335.85  3.12  3.12  0\n')
    assert result['complete'] is False and result['rows'][0]['bytes'] == 1048576


def test_an_asterisk_on_a_wrong_count_or_deviation_is_kept_as_the_figure():
    # rccl-tests prints "# Errors with asterisks indicate errors that have exceeded the maximum threshold."
    wrong = parse(HEADER + '  1048576  262144  float  sum  -1  339.61  3.09  3.09  12*  335.85  3.12  3.12  0\n')
    assert wrong['rows'][0]['out_of_place']['wrong'] == 12
    deviation = parse(V2_0.replace('2e-07   1888.0', '2e-07*   1888.0'))
    assert deviation['rows'][1]['out_of_place']['max_error'] == pytest.approx(2e-07)
    assert deviation['rows'][1]['out_of_place']['error_over_threshold'] is True
    with pytest.raises(NcclTestsParseError):
        parse(HEADER + '  1048576  262144  float  sum  -1  339.61  3.09  3.09  **  335.85  3.12  3.12  0\n')
