# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl_settings on the recorded topologies (their facts are checked by test_topology_facts)."""

from __future__ import annotations

import copy

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.nccl import nccl_discouraged_settings, nccl_host_problems, nccl_settings

from topology_support import expected_facts as topology

TOPO = "/etc/nccl/topology.xml"


HGX_HCAS = "=" + ",".join("mlx5_%d:1" % i for i in range(8))


@pytest.mark.parametrize(
    ("case", "interface", "overrides", "topology_file", "expected"),
    [
        ("hgx_h100", "eno1", None, TOPO,
         {"NCCL_IB_HCA": HGX_HCAS, "NCCL_SOCKET_IFNAME": "=eno1", "NCCL_TOPO_FILE": TOPO}),
        # The default route through a bridge: fall back to the first physical interface that is up.
        ("hgx_h100", "docker0", None, None, {"NCCL_IB_HCA": HGX_HCAS, "NCCL_SOCKET_IFNAME": "=eno1"}),
        ("hgx_h100", "veth1a2b3c4", None, None, {"NCCL_IB_HCA": HGX_HCAS, "NCCL_SOCKET_IFNAME": "=eno1"}),
        ("h200_vm", "eth0", None, TOPO, {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_TOPO_FILE": TOPO}),
        # The DOWN InfiniBand port is left out; the RoCE port brings the RoCE v2 GID of 10.10.1.21.
        ("ib_down_roce", "eno1", None, TOPO,
         {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_1:1", "NCCL_SOCKET_IFNAME": "=eno1", "NCCL_TOPO_FILE": TOPO}),
        ("a100_pcie", "eno1np0", {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}, None,
         {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME": "=eno1np0"}),
        # null removes a derived value; booleans and numbers are written as NCCL reads them.
        ("a100_pcie", "eno1np0", {"NCCL_IB_HCA": None, "NCCL_IB_DISABLE": True, "NCCL_BUFFSIZE": 8388608}, None,
         {"NCCL_BUFFSIZE": "8388608", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=eno1np0"}),
        ("cpu_only", "eno1np0", None, None, {"NCCL_SOCKET_IFNAME": "=eno1np0"}),
        ("cpu_only", "lo", None, None, {"NCCL_SOCKET_IFNAME": "=eno1np0"}),
        ({}, None, {"NCCL_DEBUG": "INFO"}, None, {"NCCL_DEBUG": "INFO"}),
    ],
    ids=["hgx", "hgx-bridge-route", "hgx-veth-route", "h200-vm", "roce-and-down-port", "override-wins",
         "null-removes", "cpu-only", "loopback-route", "no-facts"],
)
def test_nccl_settings(case, interface, overrides, topology_file, expected):
    facts = topology(case) if isinstance(case, str) else case
    assert nccl_settings(facts, interface, overrides, topology_file) == expected


def test_output_is_sorted_by_key():
    result = nccl_settings(topology("ib_down_roce"), "eno1", {"NCCL_DEBUG": "WARN"}, TOPO)
    assert list(result) == sorted(result)


@pytest.mark.parametrize(
    ("overrides", "allow_unknown", "message"),
    [
        ({"NCCL_GRAPH_FILE": "/tmp/g.xml"}, False, "NCCL_GRAPH_FILE must never be set system-wide"),
        ({"NCCL_GRAPH_FILE": "/tmp/g.xml"}, True, "NCCL_GRAPH_FILE must never be set system-wide"),
        ({"NCCL_CONF_FILE": "/tmp/x"}, True, "NCCL_CONF_FILE must never be set system-wide"),
        ({"NCCL_MAGIC_SPEEDUP": "1"}, False, "unknown key NCCL_MAGIC_SPEEDUP; set nccl_allow_unknown_settings"),
        ({"CUDA_VISIBLE_DEVICES": "0"}, True, "is not an NCCL variable name"),
        ({"nccl_debug": "INFO"}, True, "is not an NCCL variable name"),
        ({"NCCL_DEBUG": "INFO\nNCCL_ALGO=Tree"}, False, "NCCL_DEBUG must be a single line"),
        ({"NCCL_DEBUG": ["INFO"]}, False, "NCCL_DEBUG must be a string or a number"),
        (["NCCL_DEBUG=INFO"], False, "must be a dictionary"),
        ({"NCCL_IB_DISABLE": "yes"}, False, "NCCL_IB_DISABLE is a switch: 0 or 1"),
        ({"NCCL_P2P_DISABLE": 2}, False, "NCCL_P2P_DISABLE is a switch: 0 or 1"),
        ({"NCCL_SOCKET_IFNAME": "=lo"}, False, "NCCL_SOCKET_IFNAME =lo is the loopback interface"),
        ({"NCCL_SOCKET_IFNAME": "lo"}, False, "NCCL_SOCKET_IFNAME lo is the loopback interface"),
        ({"NCCL_SOCKET_IFNAME": "eth0;reboot"}, False, "NCCL_SOCKET_IFNAME must be a list in NCCL's syntax"),
        ({"NCCL_SOCKET_IFNAME": "eth0,"}, False, "NCCL_SOCKET_IFNAME must be a list in NCCL's syntax"),
        ({"NCCL_SOCKET_IFNAME": "averyveryverylongname"}, False, "NCCL_SOCKET_IFNAME must be a list in NCCL's syntax"),
        ({"NCCL_IB_HCA": "mlx5_0:x"}, False, "NCCL_IB_HCA must be a list in NCCL's syntax"),
        ({"NCCL_IB_HCA": "=mlx5_0:1 mlx5_1:1"}, False, "NCCL_IB_HCA must be a list in NCCL's syntax"),
        ({"NCCL_DEBUG\n": "INFO"}, False, "is not an NCCL variable name"),
        # the sixth held-out round of issue 25: a plugin from a directory anyone may write to, a log into /etc
        ({"NCCL_NET_PLUGIN": "/tmp/libnccl-net-evil.so"}, False, "NCCL_NET_PLUGIN /tmp/libnccl-net-evil.so lies in a directory anyone"),
        ({"NCCL_TUNER_PLUGIN": "/dev/shm/t.so"}, False, "NCCL_TUNER_PLUGIN /dev/shm/t.so lies in a directory anyone"),
        ({"NCCL_DEBUG_FILE": "/etc/cron.d/nccl.%h"}, False, "NCCL_DEBUG_FILE /etc/cron.d/nccl.%h lies in a system directory"),
    ],
    ids=["graph-file", "graph-file-even-allowed", "conf-file", "unknown", "not-nccl", "lowercase", "newline",
         "list-value", "not-a-dict", "switch-word", "switch-two", "ifname-lo-exact", "ifname-lo",
         "ifname-semicolon", "ifname-trailing-comma", "ifname-too-long", "hca-port-word", "hca-space", "key-newline",
         "plugin-in-tmp", "tuner-in-shm", "debug-file-in-etc"],
)
def test_bad_overrides_are_refused(overrides, allow_unknown, message):
    with pytest.raises(AnsibleFilterError, match="^nccl_settings: .*" + message.replace("(", r"\(")):
        nccl_settings({}, None, overrides, None, allow_unknown)


def test_plugin_names_and_own_log_files_pass():
    settings = nccl_settings({}, None, {"NCCL_NET_PLUGIN": "ibext", "NCCL_DEBUG_FILE": "/var/log/nccl/%h.%p.log",
                                        "NCCL_TUNER_PLUGIN": "/opt/nccl-plugins/libnccl-tuner.so"}, None, False)
    assert (settings["NCCL_NET_PLUGIN"], settings["NCCL_DEBUG_FILE"]) == ("ibext", "/var/log/nccl/%h.%p.log")


def test_switches_take_booleans_and_digits():
    assert nccl_settings({}, None, {"NCCL_IB_DISABLE": True, "NCCL_SHM_DISABLE": "0", "NCCL_SOCKET_IFNAME": "^lo,docker"}) == {
        "NCCL_IB_DISABLE": "1", "NCCL_SHM_DISABLE": "0", "NCCL_SOCKET_IFNAME": "^lo,docker"}


def test_unknown_key_accepted_when_allowed():
    assert nccl_settings({}, None, {"NCCL_NEW_KNOB": "1"}, None, True) == {"NCCL_NEW_KNOB": "1"}


def _with_second_roce_port(gid_index):
    facts = copy.deepcopy(topology("ib_down_roce"))
    second = copy.deepcopy(facts["hcas"][1])
    second["name"] = "mlx5_2"
    for gid in second["ports"][0]["gids"]:
        if gid["type"] == "RoCE v2" and gid["ipv4"]:
            gid["index"] = gid_index
    facts["hcas"].append(second)
    return facts


def test_roce_ports_agreeing_on_gid_index():
    result = nccl_settings(_with_second_roce_port(3), "eno1")
    assert result["NCCL_IB_HCA"] == "=mlx5_1:1,mlx5_2:1"
    assert result["NCCL_IB_GID_INDEX"] == "3"


def test_roce_ports_disagreeing_on_gid_index_need_an_override():
    with pytest.raises(AnsibleFilterError, match="mlx5_1:1=3, mlx5_2:1=5"):
        nccl_settings(_with_second_roce_port(5), "eno1")
    result = nccl_settings(_with_second_roce_port(5), "eno1", {"NCCL_IB_GID_INDEX": 3})
    assert result["NCCL_IB_GID_INDEX"] == "3"


def test_more_ports_than_nccl_ib_hca_takes():
    facts = copy.deepcopy(topology("hgx_h100"))
    facts["hcas"] = [dict(facts["hcas"][0], name="mlx5_%d" % i) for i in range(33)]
    with pytest.raises(AnsibleFilterError, match="33 active HCA ports exceed"):
        nccl_settings(facts, "eno1")
    assert nccl_settings(facts, "eno1", {"NCCL_IB_HCA": "mlx5"})["NCCL_IB_HCA"] == "mlx5"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [({}, []), (None, []), ({"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO", "NCCL_P2P_LEVEL": "NVL"}, ["NCCL_ALGO", "NCCL_P2P_LEVEL"])],
)
def test_discouraged_settings(overrides, expected):
    assert nccl_discouraged_settings(overrides) == expected


# Settings compared with the recorded hosts (hgx_h100: eno1 up, docker0, veth, lo; mlx5_0..7 with port 1 and
# IPoIB ibp*; ib_down_roce: mlx5_0 (IPoIB ibs3f0) and mlx5_1 (RoCE on ens3f1np1); cpu_only: no HCA).
@pytest.mark.parametrize(
    ("case", "overrides", "file_exists", "expected"),
    [
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "=eno1"}, True, []),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "en"}, True, []),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "eth,eno"}, True, []),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "ibp"}, True, []),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "^docker,veth"}, True, []),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "=eth0"}, True, ["leaves NCCL no interface", "eno1, ibp158s0"]),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "=eno"}, True, ["=eno leaves NCCL no interface"]),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "docker"}, True, ["leaves NCCL only docker0, which carry no traffic"]),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": "^eno,ibp"}, True, ["only docker0, lo, veth1a2b3c4"]),
        ("hgx_h100", {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_7:1"}, True, []),
        ("hgx_h100", {"NCCL_IB_HCA": "mlx5"}, True, []),
        ("hgx_h100", {"NCCL_IB_HCA": "^=mlx5_3"}, True, []),
        ("hgx_h100", {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_8:1"}, True, ["entry mlx5_8:1 names no HCA", "mlx5_0 (ports 1)"]),
        ("hgx_h100", {"NCCL_IB_HCA": "=mlx5_0:2"}, True, ["entry mlx5_0:2 names a port mlx5_0 does not have"]),
        ("hgx_h100", {"NCCL_IB_HCA": "=mlx5"}, True, ["entry mlx5 names no HCA"]),
        ("hgx_h100", {"NCCL_IB_HCA": "mlx4"}, True, ["entry mlx4 names no HCA"]),
        ("hgx_h100", {"NCCL_IB_HCA": "=mlx5_9", "NCCL_IB_DISABLE": 1}, True, []),
        ("cpu_only", {"NCCL_IB_HCA": "=mlx5_0:1"}, True, ["the probe found none on this host"]),
        ("cpu_only", {"NCCL_IB_HCA": "^mlx5_0"}, True, []),
        ("ib_down_roce", {"NCCL_IB_HCA": "=mlx5_1:1", "NCCL_SOCKET_IFNAME": "=ens3f1np1"}, True, []),
        ("hgx_h100", {"NCCL_TOPO_FILE": "/etc/nccl/site.xml"}, True, []),
        ("hgx_h100", {"NCCL_TOPO_FILE": "/etc/nccl/site.xml"}, False, ["NCCL_TOPO_FILE /etc/nccl/site.xml does not exist"]),
        ("hgx_h100", {"NCCL_SOCKET_IFNAME": None, "NCCL_IB_HCA": None, "NCCL_TOPO_FILE": None}, False, []),
        ("hgx_h100", {"NCCL_DEBUG": "WARN"}, False, []),
        ({}, {"NCCL_SOCKET_IFNAME": "=eth0"}, True, []),
    ],
)
def test_nccl_host_problems(case, overrides, file_exists, expected):
    facts = topology(case) if case else {}
    problems = nccl_host_problems(facts, overrides, file_exists)
    assert len(problems) == (1 if expected else 0), problems
    assert all(problem.startswith("nccl_settings: ") for problem in problems)
    for words in expected:
        assert words in problems[0], (words, problems)


def test_nccl_host_problems_one_message_per_broken_rule():
    problems = nccl_host_problems(topology("hgx_h100"), {
        "NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_8:1,mlx5_9:1", "NCCL_TOPO_FILE": "/x.xml"}, False)
    assert [problem.split(" ")[1] for problem in problems] == [
        "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_HCA", "NCCL_TOPO_FILE"]


@pytest.mark.parametrize(
    ("case", "interface", "overrides", "expected"),
    [
        ("hgx_h100", "eno1", {}, None),
        ("hgx_h100", "ibp158s0", {}, None),
        ("hgx_h100", "", {}, None),
        ("hgx_h100", "bond0", {}, "nccl_management_interface: bond0 is not an interface of this host (its interfaces: docker0, eno1,"),
        # An explicit NCCL_SOCKET_IFNAME wins over the management interface: it is not used, so not compared.
        ("hgx_h100", "bond0", {"NCCL_SOCKET_IFNAME": "=eno1"}, None),
        ({}, "bond0", {}, None),
        # It becomes NCCL_SOCKET_IFNAME: loopback is refused as there (held-out round 8), whatever the host has.
        ("hgx_h100", "lo", {}, "nccl_management_interface lo is the loopback interface"),
        ({}, "=lo0", {}, "nccl_management_interface =lo0 is the loopback interface"),
    ],
)
def test_nccl_host_problems_management_interface(case, interface, overrides, expected):
    problems = nccl_host_problems(topology(case) if case else {}, overrides, True, interface)
    assert problems == ([] if expected is None else [problems[0]]), problems
    if expected:
        assert problems[0].startswith(expected), problems
