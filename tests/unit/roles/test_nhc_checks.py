# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's NHC checks (roles/nhc/files/scripts/trainstack_*.nhc) run by the real NHC 1.4.3.

Stand-in commands print recorded outputs (tests/unit/fixtures/nhc/README.md says where each comes from); a bad
case that no recording shows is made here by editing one value of a recording, its layout kept.  Expected exit
statuses and message words are written by hand.  NHC is built once per session from the site mirror; without the
tarball or the build tools every test here skips with the reason.
"""

from __future__ import annotations

import os

import pytest

from nhc_support import NhcUnavailable, StandIn, build_nhc, read_fixture, run_nhc, write_tree

FATAL_XIDS = '48,56,57,58,62,63,64,65,68,69,73,74,79,80,81,92,119,120'  # Azure's ND H100 v5 list
# 2026-12-04T18:00:00Z: a few minutes after the H200 recording's boot (its dmesg starts 17:46:25)
NOW = '1796407200'


@pytest.fixture(scope='session', name='nhc_prefix')
def fixture_nhc_prefix(tmp_path_factory):
    try:
        return build_nhc(str(tmp_path_factory.mktemp('nhc-build')))
    except NhcUnavailable as exc:
        pytest.skip(str(exc))
    return None


def fixture(name):
    return read_fixture(name if '/' in name else 'nhc/' + name)


def query(fields):
    return '--query-gpu=%s --format=csv,noheader' % fields


H200_COUNT = fixture('h200_query_count.txt')  # 0, 00000000:00:06.0, NVIDIA H200
H200_DRIVER = fixture('h200_query_driver.txt')
H200_PERSISTENCE = fixture('h200_query_persistence.txt')
H200_MEMORY = fixture('h200_query_memory.txt')  # 0, 00000000:00:06.0, No, No, [N/A], 0
H200_FABRIC = fixture('h200_query_fabric_na.txt')
MEMORY_FIELDS = 'index,pci.bus_id,remapped_rows.pending,remapped_rows.failure,retired_pages.pending,ecc.errors.uncorrected.volatile.total'


def second_gpu(text):
    """The recording plus GPU 1 at 00000000:00:07.0 (the second GPU of the 2 x H200 device probe host)."""
    row = text.splitlines()[0].replace('0, 00000000:00:06.0', '1, 00000000:00:07.0')
    return text + row + '\n'


def edit(text, old, new):
    assert old in text, (old, text)
    return text.replace(old, new, 1)


def sysfs_from_tail(text):
    """{path below /sys: content} from `tail -v -n +1 /sys/...` output (==> path <== headers)."""
    files, path = {}, None
    for line in text.splitlines():
        if line.startswith('==> ') and line.endswith(' <=='):
            path = line[4:-4]
            assert path.startswith('/sys/'), path
            path = path[len('/sys/'):]
            files[path] = ''
        elif path and line:
            files[path] += line + '\n'
    return files


def sysfs_from_ibstatus(text):
    """{path below /sys: content} from ibstatus output, which prints each port's sysfs state, phys_state, rate."""
    files, port = {}, None
    names = {'state:': 'state', 'phys state:': 'phys_state', 'rate:': 'rate'}
    for line in text.splitlines():
        if line.startswith("Infiniband device '"):
            hca = line.split("'")[1]
            port = 'class/infiniband/%s/ports/%s' % (hca, line.split(' port ')[1].split()[0])
            continue
        key, value = (line.strip().split('\t', 1) + [''])[:2]
        if port and key in names:
            files['%s/%s' % (port, names[key])] = value.strip() + '\n'
    return files


def assert_result(result, rc, words):
    assert result.rc == rc, result.output
    if rc == 0:
        assert result.message == '', result.output
    for word in words:
        assert word in result.message, (word, result.output)


# ---------------------------------------------------------------------------------------------- GPU queries
GPU_QUERY_CASES = [
    # check line, nvidia-smi output, nvidia-smi rc, expected NHC rc, words of the failure message
    pytest.param('check_trainstack_gpu_count 1 H200', H200_COUNT, 0, 0, [], id='count-h200-good'),
    pytest.param('check_trainstack_gpu_count 2', second_gpu(H200_COUNT), 0, 0, [], id='count-two-gpus'),
    pytest.param('check_trainstack_gpu_count 8', H200_COUNT, 0, 1,
                 ['check_trainstack_gpu_count:  expected 8 GPUs, found 1'], id='count-one-of-eight'),
    pytest.param('check_trainstack_gpu_count 1 H100', H200_COUNT, 0, 1,
                 ["check_trainstack_gpu_count:  expected every GPU name to contain 'H100'; found GPU 0 (00000000:00:06.0) is 'NVIDIA H200'"],
                 id='count-wrong-model'),
    pytest.param('check_trainstack_gpu_count 8', fixture('h200_no_devices_found.txt'), 6, 1,
                 ['check_trainstack_gpu_count:  expected 8 GPUs, found 0 (nvidia-smi rc 6: No devices were found)'], id='count-no-gpus'),
    pytest.param('check_trainstack_gpu_count 2', H200_COUNT + fixture('device_handle_unknown_error.txt'), 15, 1,
                 ['check_trainstack_gpu_count:  expected 2 GPUs, found 1; nvidia-smi: '
                  'Unable to determine the device handle for GPU0000:65:00.0: Unknown Error'],
                 id='count-gpu-off-the-bus'),
    pytest.param('check_trainstack_gpu_driver 580.159.04', H200_DRIVER, 0, 0, [], id='driver-good'),
    pytest.param('check_trainstack_gpu_driver 570.158.01', H200_DRIVER, 0, 1,
                 ['check_trainstack_gpu_driver:  expected driver 570.158.01; found GPU 0 (00000000:00:06.0) has 580.159.04'], id='driver-other'),
    pytest.param('check_trainstack_gpu_driver 580.159.04', edit(second_gpu(H200_DRIVER), '1, 00000000:00:07.0, 580.159.04', '1, 00000000:00:07.0, 580.126.09'),
                 0, 1, ['found GPU 1 (00000000:00:07.0) has 580.126.09'], id='driver-mixed'),
    pytest.param('check_trainstack_gpu_driver 580.159.04', fixture('device_handle_unknown_error.txt'), 15, 1,
                 ['check_trainstack_gpu_driver:  no GPU answered (nvidia-smi rc 15: Unable to determine the device handle'], id='driver-gpu-lost'),
    pytest.param('check_trainstack_gpu_persistence', H200_PERSISTENCE, 0, 0, [], id='persistence-good'),
    pytest.param('check_trainstack_gpu_persistence', edit(second_gpu(H200_PERSISTENCE), '1, 00000000:00:07.0, Enabled', '1, 00000000:00:07.0, Disabled'),
                 0, 1, ['check_trainstack_gpu_persistence:  expected persistence mode Enabled on every GPU; found GPU 1 (00000000:00:07.0) Disabled'],
                 id='persistence-off'),
    pytest.param('check_trainstack_gpu_memory', H200_MEMORY, 0, 0, [], id='memory-good-retired-pages-na'),
    pytest.param('check_trainstack_gpu_memory', '0, 00000000:01:00.0, [N/A], [N/A], [N/A], [N/A]\n', 0, 0, [], id='memory-all-na'),
    pytest.param('check_trainstack_gpu_memory', edit(H200_MEMORY, 'No, No,', 'Yes, No,'), 0, 1,
                 ['check_trainstack_gpu_memory:  expected no pending/failed row remap', 'GPU 0 (00000000:00:06.0) row remap pending Yes'],
                 id='memory-remap-pending'),
    pytest.param('check_trainstack_gpu_memory', edit(H200_MEMORY, 'No, No,', 'No, Yes,'), 0, 1,
                 ['GPU 0 (00000000:00:06.0) row remap failure Yes'], id='memory-remap-failure'),
    pytest.param('check_trainstack_gpu_memory', edit(H200_MEMORY, '[N/A]', 'Yes'), 0, 1,
                 ['GPU 0 (00000000:00:06.0) retired pages pending Yes'], id='memory-retired-pending'),
    pytest.param('check_trainstack_gpu_memory', edit(H200_MEMORY, '[N/A], 0', '[N/A], 2'), 0, 1,
                 ['GPU 0 (00000000:00:06.0) uncorrectable volatile ECC errors 2'], id='memory-ecc'),
    pytest.param('check_trainstack_fabricmanager', H200_FABRIC, 0, 1,
                 ['check_trainstack_fabricmanager:  expected fabric state Completed/Success on every GPU (fabric.state); '
                  'found GPU 0 (00000000:00:06.0) N/A/N/A'],
                 id='fabric-na-no-nvswitch'),
    pytest.param('check_trainstack_fabricmanager', edit(H200_FABRIC, 'N/A, N/A', 'Completed, Success'), 0, 0, [], id='fabric-completed'),
    pytest.param('check_trainstack_fabricmanager',
                 edit(second_gpu(edit(H200_FABRIC, 'N/A, N/A', 'Completed, Success')), '1, 00000000:00:07.0, Completed, Success',
                      '1, 00000000:00:07.0, In Progress, N/A'),
                 0, 1, ['found GPU 1 (00000000:00:07.0) In Progress/N/A'], id='fabric-in-progress'),
]


@pytest.mark.parametrize('check, output, smi_rc, rc, words', GPU_QUERY_CASES)
def test_gpu_query_checks(nhc_prefix, check, output, smi_rc, rc, words):
    result = run_nhc(nhc_prefix, [check], {'nvidia-smi': StandIn(output, smi_rc)})
    assert_result(result, rc, words)
    # one nvidia-smi call, a --query-gpu (never the full -q dump)
    assert len(result.calls['nvidia-smi']) == 1
    assert result.calls['nvidia-smi'][0].startswith('--query-gpu=index,pci.bus_id,')


def test_the_queries_ask_for_the_recorded_fields(nhc_prefix):
    # the recordings were taken with exactly these queries (fixtures/nhc/record_h200.sh)
    expected = {
        'check_trainstack_gpu_count 1': query('index,pci.bus_id,name'),
        'check_trainstack_gpu_driver 580.159.04': query('index,pci.bus_id,driver_version'),
        'check_trainstack_gpu_persistence': query('index,pci.bus_id,persistence_mode'),
        'check_trainstack_gpu_memory': query(MEMORY_FIELDS),
        'check_trainstack_fabricmanager': query('index,pci.bus_id,fabric.state,fabric.status'),
    }
    for check, args in expected.items():
        result = run_nhc(nhc_prefix, [check], {'nvidia-smi': StandIn(H200_COUNT)})
        assert result.calls['nvidia-smi'] == [args], check


def test_missing_nvidia_smi_names_the_path(nhc_prefix):
    result = run_nhc(nhc_prefix, ['check_trainstack_gpu_count 8'], env={'NVIDIA_SMI': '/nonexistent/nvidia-smi'})
    assert_result(result, 1, ['check_trainstack_gpu_count:  /nonexistent/nvidia-smi: command not found'])


@pytest.mark.parametrize('q_output, rc, words', [
    pytest.param(fixture('nvsmi_query/h800_hgx_persistence_fabric_completed.txt'), 0, [], id='hgx-h800-completed'),
    pytest.param(fixture('nvsmi_query/a10g_persistence_off_fabric_na.txt'), 1,
                 ['(nvidia-smi -q); found GPU 0 (00000000:00:1E.0) N/A/N/A'], id='a10g-na'),
    pytest.param(fixture('nvsmi_query/v100_notebook_indented_retired_pages.txt'), 1,
                 ['found GPU 0 (00000001:00:00.0) N/A/N/A'], id='v100-indented-health-subsection'),
    pytest.param(fixture('nvsmi_query/rtx2070_two_gpus_no_fabric_section.txt'), 1,
                 ['nvidia-smi -q shows no Fabric section'], id='driver-450-no-fabric-section'),
])
def test_fabricmanager_falls_back_to_q_on_drivers_without_fabric_fields(nhc_prefix, q_output, rc, words):
    unknown = fixture('h200_query_unknown_field.txt')  # nvidia-smi's words (and rc 2) for a field it does not know
    smi = StandIn(unknown, 2, when={'-q': StandIn(q_output)})
    result = run_nhc(nhc_prefix, ['check_trainstack_fabricmanager'], {'nvidia-smi': smi})
    assert_result(result, rc, words)
    assert result.calls['nvidia-smi'] == [query('index,pci.bus_id,fabric.state,fabric.status'), '-q']


# ---------------------------------------------------------------------------------------------- NVLink
@pytest.mark.parametrize('check, output, rc, words', [
    pytest.param('check_trainstack_gpu_nvlink 18', fixture('h200x2_nvlink_s_18_links.txt'), 0, [], id='h200x2-18-links'),
    pytest.param('check_trainstack_gpu_nvlink', fixture('h200x2_nvlink_s_18_links.txt'), 0, [], id='h200x2-no-count'),
    pytest.param('check_trainstack_gpu_nvlink 12', fixture('h200x2_nvlink_s_18_links.txt'), 1,
                 ['check_trainstack_gpu_nvlink:  expected 12 active NVLinks per GPU; found GPU 0 has 18,GPU 1 has 18'], id='h200x2-wrong-count'),
    pytest.param('check_trainstack_gpu_nvlink', fixture('v100_nvlink_s_two_inactive.txt'), 1,
                 ['check_trainstack_gpu_nvlink:  expected every NVLink active; found inactive: GPU 3 link 3,GPU 3 link 5'], id='v100-inactive'),
    pytest.param('check_trainstack_gpu_nvlink 18', edit(fixture('h200x2_nvlink_s_18_links.txt'), 'Link 17: 26.562 GB/s', 'Link 17: <inactive>'), 1,
                 ['found inactive: GPU 0 link 17'], id='h200x2-one-link-down'),
    pytest.param('check_trainstack_gpu_nvlink', fixture('h200_nvlink_s_no_nvlink.txt'), 0, [], id='single-gpu-no-nvlink'),
    pytest.param('check_trainstack_gpu_nvlink 18', fixture('h200_nvlink_s_no_nvlink.txt'), 1,
                 ['check_trainstack_gpu_nvlink:  expected 18 active NVLinks per GPU; nvidia-smi nvlink -s reported no GPU'], id='expected-but-none'),
])
def test_gpu_nvlink(nhc_prefix, check, output, rc, words):
    result = run_nhc(nhc_prefix, [check], {'nvidia-smi': StandIn(output)})
    assert_result(result, rc, words)
    assert result.calls['nvidia-smi'] == ['nvlink -s']


# ---------------------------------------------------------------------------------------------- kernel log
XID79 = fixture('xid/journal_xid79_fallen_off_bus.txt')  # Xid 79 line + the driver's follow-up line


def iso(stamp, line):
    """A recorded kernel message behind a `dmesg --time-format iso` stamp (layout of the H200 recording)."""
    return '%s,000000+00:00 %s' % (stamp, line)


XID79_LINES = [line.split(' kernel: ', 1)[1] for line in XID79.splitlines() if ' kernel: ' in line]
DMESG_OLD_XID = fixture('h200_dmesg_iso_boot.txt') + ''.join(iso('2026-12-04T15:40:00', line) + '\n' for line in XID79_LINES)
DMESG_NEW_XID = fixture('h200_dmesg_iso_boot.txt') + ''.join(iso('2026-12-04T17:45:00', line) + '\n' for line in XID79_LINES)


@pytest.mark.parametrize('check, journal, rc, words', [
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, XID79, 1,
                 ['check_trainstack_gpu_xid:  expected no fatal Xid (%s) nor GPU off the bus in the last 7200s (journalctl -k); found 1, '
                  'first: Xid 79 on PCI:0000:01:00: ' % FATAL_XIDS, 'NVRM: Xid (PCI:0000:01:00): 79, pid=1122, GPU has fallen off the bus.'],
                 id='xid79-one-event'),
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, fixture('xid/dmesg_fallen_off_bus_without_xid.txt'), 1,
                 ['found 1, first: GPU 0000:b3:00 fell off the bus: ', 'NVRM: fallen off the bus and is not responding to commands.'],
                 id='fallen-off-without-xid'),
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, fixture('xid/journal_xid45_after_nvlink_xid149.txt'), 0, [], id='xid45-not-fatal'),
    pytest.param('check_trainstack_gpu_xid 7200 94,149', fixture('xid/kmsg_nvlink_xid149_145_and_xid94.txt'), 1,
                 ['first: Xid 149 on PCI:0019:01:00: NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal'], id='nvlink-xid149'),
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, fixture('xid/dmesg_xid32_xid31_laptop.txt'), 0, [], id='xid31-32-not-fatal'),
    pytest.param('check_trainstack_ib_flaps 86400 5', fixture('dmesg_mlx5_link_down_two_ports.txt'), 0, [], id='flaps-two-of-five'),
    pytest.param('check_trainstack_ib_flaps 86400 1', fixture('dmesg_mlx5_link_down_two_ports.txt'), 1,
                 ['check_trainstack_ib_flaps:  expected at most 1 link-down events in the last 86400s (journalctl -k); found 2, '
                  'last: [18866.057990] mlx5_core 0000:01:00.1 enp1s0f1np1: Link down'], id='flaps-two-of-one'),
    pytest.param('check_trainstack_ib_flaps 86400 2', fixture('journal_mlx5_link_down_three_nodes.txt'), 1,
                 ['found 3, last: 2026-08-07T09:24:35Z node6 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down'], id='flaps-link-up-not-counted'),
])
def test_kernel_log_checks_from_the_journal(nhc_prefix, check, journal, rc, words):
    result = run_nhc(nhc_prefix, [check], {'journalctl': StandIn(journal)}, env={'TRAINSTACK_NHC_KLOG': 'journal'})
    assert_result(result, rc, words)
    window = check.split()[1]
    assert result.calls['journalctl'] == ['-k -q --no-pager -o short-iso --since -%ss' % window]


@pytest.mark.parametrize('check, dmesg, rc, words', [
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, fixture('h200_dmesg_iso_boot.txt'), 0, [], id='h200-boot-clean'),
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, DMESG_OLD_XID, 0, [], id='xid79-older-than-window'),
    pytest.param('check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, DMESG_NEW_XID, 1,
                 ['in the last 7200s (dmesg); found 1, first: Xid 79 on PCI:0000:01:00: 2026-12-04T17:45:00,000000+00:00 NVRM: Xid'],
                 id='xid79-inside-window'),
    pytest.param('check_trainstack_gpu_xid 600 ' + FATAL_XIDS, DMESG_NEW_XID, 0, [], id='xid79-outside-short-window'),
    pytest.param('check_trainstack_ib_flaps 86400 0', fixture('h200_dmesg_iso_boot.txt'), 0, [], id='flaps-h200-boot-clean'),
])
def test_kernel_log_checks_from_dmesg_window(nhc_prefix, check, dmesg, rc, words):
    result = run_nhc(nhc_prefix, [check], {'dmesg': StandIn(dmesg)}, env={'TRAINSTACK_NHC_KLOG': 'dmesg', 'TRAINSTACK_NHC_NOW': NOW})
    assert_result(result, rc, words)
    assert result.calls['dmesg'] == ['--time-format iso']


def test_unreadable_kernel_log_fails(nhc_prefix):
    # hand-made: util-linux's words when kernel.dmesg_restrict keeps a non-root caller out
    denied = StandIn('dmesg: read kernel buffer failed: Operation not permitted\n', 1)
    result = run_nhc(nhc_prefix, ['check_trainstack_gpu_xid 7200 79'], {'dmesg': denied}, env={'TRAINSTACK_NHC_KLOG': 'dmesg'})
    assert_result(result, 1, ['check_trainstack_gpu_xid:  cannot read the kernel log (dmesg rc 1: dmesg: read kernel buffer failed'])


# ---------------------------------------------------------------------------------------------- sysfs
@pytest.mark.parametrize('check, recording, rc, words', [
    pytest.param('check_trainstack_pcie_link 00000000:00:06.0 16 32', 'sysfs_pcie_h200_x16_32gt.txt', 0, [], id='h200-gen5-x16-nvidia-smi-bdf'),
    pytest.param('check_trainstack_pcie_link 0000:01:00.0 16 32', 'sysfs_pcie_x8_16gt_of_x16_32gt.txt', 1,
                 ['check_trainstack_pcie_link:  0000:01:00.0 expected at least x16 at 32 GT/s, found x8 at 16.0 GT/s PCIe'], id='downtrained'),
    pytest.param('check_trainstack_pcie_link 01:00.0 8 16', 'sysfs_pcie_x8_16gt_of_x16_32gt.txt', 0, [], id='lspci-bdf-as-expected'),
    pytest.param('check_trainstack_pcie_link 0000:01:00.0 8 0', 'sysfs_pcie_x8_16gt_of_x16_32gt.txt', 0, [], id='speed-skipped'),
    pytest.param('check_trainstack_pcie_link 0000:01:00.0 16 0', 'sysfs_pcie_x8_16gt_of_x16_32gt.txt', 1, ['found x8 at 16.0 GT/s PCIe'], id='width-only'),
    pytest.param('check_trainstack_pcie_link 0000:3b:00.0 16 32', 'sysfs_pcie_h200_x16_32gt.txt', 1,
                 ['check_trainstack_pcie_link:  0000:3b:00.0 expected on the PCI bus, found no '], id='device-gone'),
    pytest.param('check_trainstack_ib_port mlx5_1 1 200', 'ibstatus_hdr_ib_active_eth_down.txt', 0, [], id='ib-hdr-active'),
    pytest.param('check_trainstack_ib_port mlx5_1 1 400', 'ibstatus_hdr_ib_active_eth_down.txt', 1,
                 ["check_trainstack_ib_port:  mlx5_1 port 1 expected state '4: ACTIVE', phys_state '5: LinkUp', rate >= 400 Gb/sec; "
                  "found rate '200 Gb/sec (4X HDR)'"], id='ib-rate-below'),
    pytest.param('check_trainstack_ib_port mlx5_2 1 200', 'ibstatus_hdr_ib_active_eth_down.txt', 1,
                 ["found state '1: DOWN',phys_state '3: Disabled'"], id='ib-port-down'),
    pytest.param('check_trainstack_ib_port mlx5_0 1 25', 'ibstatus_edr_active_qdr_down.txt', 0, [], id='edr-1x-active'),
    pytest.param('check_trainstack_ib_port mlx5_1 1 40', 'ibstatus_edr_active_qdr_down.txt', 1, ["found state '1: DOWN',phys_state '3: Disabled'"],
                 id='qdr-down'),
    pytest.param('check_trainstack_ib_port mlx5_7 1 400', 'ibstatus_edr_active_qdr_down.txt', 1,
                 ['check_trainstack_ib_port:  mlx5_7 port 1 expected, found no '], id='hca-missing'),
])
def test_sysfs_checks(nhc_prefix, tmp_path, check, recording, rc, words):
    text = fixture(recording)
    write_tree(str(tmp_path), sysfs_from_ibstatus(text) if recording.startswith('ibstatus') else sysfs_from_tail(text))
    result = run_nhc(nhc_prefix, [check], env={'TRAINSTACK_NHC_SYSFS': str(tmp_path)})
    assert_result(result, rc, words)


# ---------------------------------------------------------------------------------------------- clock
NO_SYSTEMD = StandIn(fixture('timedatectl_no_systemd.txt'), 1)


@pytest.mark.parametrize('stand_ins, env, rc, words', [
    pytest.param({'timedatectl': StandIn('yes\n')}, {}, 0, [], id='timedatectl-yes'),
    pytest.param({'timedatectl': NO_SYSTEMD, 'chronyc': StandIn(fixture('chronyc_tracking_normal_excerpt.txt'))}, {}, 0, [], id='no-systemd-chrony-normal'),
    pytest.param({'timedatectl': NO_SYSTEMD, 'chronyc': StandIn(fixture('chronyc_tracking_not_synchronised.txt'))}, {}, 1,
                 ['check_trainstack_clock_sync:  clock not synchronised, expected NTPSynchronized=yes or chrony Leap status Normal; found timedatectl rc 1: '
                  "System has not been booted with systemd as init system (PID 1). Can't operate.; chronyc Leap status Not synchronised"],
                 id='no-systemd-chrony-unsynchronised'),
    pytest.param({'timedatectl': StandIn('no\n')}, {'CHRONYC': '/nonexistent/chronyc'}, 1,
                 ['found timedatectl NTPSynchronized=no; chronyc rc 127: /nonexistent/chronyc: command not found'], id='timedatectl-no-without-chrony'),
])
def test_clock_sync(nhc_prefix, stand_ins, env, rc, words):
    result = run_nhc(nhc_prefix, ['check_trainstack_clock_sync'], stand_ins, env=env)
    assert_result(result, rc, words)


# ---------------------------------------------------------------------------------------------- a whole run
def test_one_full_run_of_every_gpu_and_ib_check_is_fast(nhc_prefix, tmp_path):
    write_tree(str(tmp_path), sysfs_from_tail(fixture('sysfs_pcie_h200_x16_32gt.txt')))
    write_tree(str(tmp_path), sysfs_from_ibstatus(fixture('ibstatus_hdr_ib_active_eth_down.txt')))
    two = {
        query('index,pci.bus_id,name'): second_gpu(H200_COUNT),
        query('index,pci.bus_id,driver_version'): second_gpu(H200_DRIVER),
        query('index,pci.bus_id,persistence_mode'): second_gpu(H200_PERSISTENCE),
        query(MEMORY_FIELDS): second_gpu(H200_MEMORY),
        query('index,pci.bus_id,fabric.state,fabric.status'): second_gpu(edit(H200_FABRIC, 'N/A, N/A', 'Completed, Success')),
        'nvlink -s': fixture('h200x2_nvlink_s_18_links.txt'),
    }
    smi = StandIn('unexpected arguments\n', 2, when={args: StandIn(text) for args, text in two.items()})
    checks = [
        'check_trainstack_gpu_count 2 H200', 'check_trainstack_gpu_driver 580.159.04', 'check_trainstack_gpu_persistence',
        'check_trainstack_gpu_memory', 'check_trainstack_gpu_xid 7200 ' + FATAL_XIDS, 'check_trainstack_pcie_link 00000000:00:06.0 16 32',
        'check_trainstack_gpu_nvlink 18', 'check_trainstack_fabricmanager', 'check_trainstack_ib_port mlx5_1 1 200', 'check_trainstack_ib_flaps 86400 5',
        'check_trainstack_clock_sync',
    ]
    stand_ins = {'nvidia-smi': smi, 'dmesg': StandIn(fixture('h200_dmesg_iso_boot.txt')), 'timedatectl': StandIn('yes\n')}
    env = {'TRAINSTACK_NHC_SYSFS': str(tmp_path), 'TRAINSTACK_NHC_KLOG': 'dmesg', 'TRAINSTACK_NHC_NOW': NOW}
    result = run_nhc(nhc_prefix, checks, stand_ins, env=env)
    assert_result(result, 0, [])
    assert len(result.calls['nvidia-smi']) == 6
    assert len(result.calls['dmesg']) == 2  # one read of the kernel log per distinct window (7200 s, 86400 s)
    print('full NHC run, %d checks: %.3f s' % (len(checks), result.seconds))
    assert result.seconds < 10, result.seconds


def test_check_files_document_their_interface():
    scripts = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '..', '..', 'roles', 'nhc', 'files', 'scripts')
    names = {
        'trainstack_gpu.nhc': ['check_trainstack_gpu_count COUNT [MODEL_SUBSTRING]', 'check_trainstack_gpu_driver VERSION', 'check_trainstack_gpu_persistence',
                               'check_trainstack_gpu_xid WINDOW_SECONDS FATAL_XIDS_COMMA_LIST', 'check_trainstack_gpu_memory',
                               'check_trainstack_pcie_link BDF WIDTH SPEED_GT_S', 'check_trainstack_gpu_nvlink [EXPECTED_LINKS_PER_GPU]',
                               'check_trainstack_fabricmanager'],
        'trainstack_ib.nhc': ['check_trainstack_ib_port HCA PORT RATE_GBPS', 'check_trainstack_ib_flaps WINDOW_SECONDS MAX'],
        'trainstack_node.nhc': ['check_trainstack_clock_sync'],
    }
    for name, signatures in names.items():
        with open(os.path.join(scripts, name), encoding='utf-8') as handle:
            text = handle.read()
        header = text.split('\nfunction ', 1)[0]
        for signature in signatures:
            assert '#   ' + signature in header, (name, signature)
            assert 'function %s() {' % signature.split()[0] in text, (name, signature)
