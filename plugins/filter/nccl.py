# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NCCL settings for /etc/nccl.conf, derived from topology facts plus inventory overrides (controller side, pure)."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# Keys NCCL reads from its environment / config file (NCCL 2.18 - 2.30 user guide, env.rst).
KNOWN_SETTINGS = frozenset("""
NCCL_ALGO NCCL_BUFFSIZE NCCL_CGA_CLUSTER_SIZE NCCL_CHECK_POINTERS NCCL_COLLNET_ENABLE
NCCL_COLLNET_NODE_THRESHOLD NCCL_COMM_BLOCKING NCCL_CROSS_NIC NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE
NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_DMABUF_ENABLE NCCL_GDRCOPY_ENABLE NCCL_GRAPH_MIXING_SUPPORT
NCCL_GRAPH_REGISTER NCCL_HOSTID NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE
NCCL_IB_AR_THRESHOLD NCCL_IB_CUDA_SUPPORT NCCL_IB_DISABLE NCCL_IB_ECE_ENABLE NCCL_IB_FIFO_TC
NCCL_IB_GID_INDEX NCCL_IB_HCA NCCL_IB_MERGE_NICS NCCL_IB_MERGE_VFS NCCL_IB_PCI_RELAXED_ORDERING
NCCL_IB_QPS_PER_CONNECTION NCCL_IB_RETRY_CNT NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL
NCCL_IB_SPLIT_DATA_ON_QPS NCCL_IB_TC NCCL_IB_TIMEOUT NCCL_IB_USE_INLINE NCCL_IGNORE_CPU_AFFINITY
NCCL_LAUNCH_MODE NCCL_LOCAL_REGISTER NCCL_MAX_CTAS NCCL_MAX_NCHANNELS NCCL_MIN_CTAS NCCL_MIN_NCHANNELS
NCCL_MNNVL_ENABLE NCCL_NCHANNELS_PER_NET_PEER NCCL_NET NCCL_NET_FORCE_FLUSH NCCL_NET_GDR_LEVEL
NCCL_NET_GDR_READ NCCL_NET_PLUGIN NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_NSOCKS_PERTHREAD
NCCL_NTHREADS NCCL_NVB_DISABLE NCCL_NVLS_CHUNKSIZE NCCL_NVLS_ENABLE NCCL_P2P_DIRECT_DISABLE
NCCL_P2P_DISABLE NCCL_P2P_LEVEL NCCL_P2P_NET_CHUNKSIZE NCCL_P2P_NVL_CHUNKSIZE NCCL_P2P_PXN_LEVEL
NCCL_PROFILER_PLUGIN NCCL_PROTO NCCL_PXN_DISABLE NCCL_RAS_ENABLE NCCL_RUNTIME_CONNECT NCCL_SET_STACK_SIZE
NCCL_SET_THREAD_NAME NCCL_SHM_DISABLE NCCL_SOCKET_FAMILY NCCL_SOCKET_IFNAME NCCL_SOCKET_NTHREADS
NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_TOPO_DUMP_FILE NCCL_TOPO_FILE NCCL_TUNER_PLUGIN
NCCL_WORK_FIFO_DEPTH
""".split())

# Never system-wide: a graph file describes one job's GPU set and breaks jobs with fewer GPUs.
FORBIDDEN_SETTINGS = frozenset(["NCCL_GRAPH_FILE", "NCCL_CONF_FILE"])

# Debugging knobs NVIDIA advises against in production; a wrong value can halve bandwidth.
DISCOURAGED_SETTINGS = frozenset(["NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL", "NCCL_ALGO", "NCCL_PROTO"])

# Interfaces that never carry NCCL's bootstrap traffic: loopback, container and VM bridges, tunnels.
_NOT_A_SOCKET_INTERFACE = re.compile(r"^(lo|docker\d*|virbr\d*|br-.*|veth.*|cni\d*|flannel.*|cali.*|tun\d*|tap\d*|vxlan.*)$")
_KEY = re.compile(r"NCCL_[A-Z0-9_]+\Z")
# NCCL's list syntax: ^ excludes, = matches exact names; HCA entries may name a port (mlx5_0:1).
_LIST_SYNTAX = {
    "NCCL_SOCKET_IFNAME": re.compile(r"\^?=?[A-Za-z0-9_.:@-]{1,15}(,[A-Za-z0-9_.:@-]{1,15})*\Z"),
    "NCCL_IB_HCA": re.compile(r"\^?=?[A-Za-z0-9_.-]+(:[0-9]+)?(,[A-Za-z0-9_.-]+(:[0-9]+)?)*\Z"),
}
# Switches the user guide documents as 0 or 1 (set to 1 to disable / enable): another value is a typo NCCL reads as
# some number, not an error.
SWITCH_SETTINGS = frozenset("""
NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_IB_DISABLE NCCL_P2P_DIRECT_DISABLE NCCL_NVB_DISABLE NCCL_PXN_DISABLE
NCCL_NET_GDR_READ NCCL_IGNORE_CPU_AFFINITY NCCL_COLLNET_ENABLE NCCL_DMABUF_ENABLE NCCL_CUMEM_ENABLE
""".split())
MAX_IB_HCA_ENTRIES = 32


def _error(message):
    raise AnsibleFilterError("nccl_settings: " + message)


# Settings naming a library NCCL loads (a name such as ibext, or a path), and files every rank writes.
_PLUGIN_SETTINGS = ("NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN")
_WRITTEN_FILE_SETTINGS = ("NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE")
_WORLD_WRITABLE = ("/tmp/", "/var/tmp/", "/dev/shm/")
_SYSTEM_TREES = ("/etc/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/boot/", "/proc/", "/sys/", "/dev/", "/root/",
                 "/var/lib/dpkg/", "/var/spool/cron/")


def check_overrides(overrides, allow_unknown=False):
    """Validate inventory overrides; return them as a dict of str -> str (None kept: it removes a derived key)."""
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        _error("must be a dictionary of NCCL_* keys, got %s" % type(overrides).__name__)
    checked = {}
    for key, value in overrides.items():
        if not isinstance(key, str) or not _KEY.match(key):
            _error("key %r is not an NCCL variable name (NCCL_[A-Z0-9_]+)" % (key,))
        if key in FORBIDDEN_SETTINGS:
            _error("%s must never be set system-wide (it breaks jobs that use fewer GPUs or another config)" % key)
        if key not in KNOWN_SETTINGS and not allow_unknown:
            _error("unknown key %s; set nccl_allow_unknown_settings: true if your NCCL version reads it" % key)
        if value is None:
            checked[key] = None
            continue
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (str, int, float)):
            _error("%s must be a string or a number, got %s" % (key, type(value).__name__))
        text = str(value)
        if "\n" in text or "\r" in text:
            _error("%s must be a single line" % key)
        if key in _LIST_SYNTAX and not _LIST_SYNTAX[key].fullmatch(text):
            _error("%s must be a list in NCCL's syntax ([^][=]name,name...), got %r" % (key, text))
        if key in SWITCH_SETTINGS and text not in ("0", "1"):
            _error("%s is a switch: 0 or 1 (or true/false), got %r" % (key, text))
        # System-wide, loopback only would keep every job on one node (NCCL picks lo only when told to).
        if key == "NCCL_SOCKET_IFNAME" and text.lstrip("=") in ("lo", "lo0"):
            _error("NCCL_SOCKET_IFNAME %s is the loopback interface: jobs across nodes could not connect" % text)
        # Every rank of every job loads the plugin, or writes the file: never from a directory anyone may write to,
        # never into the system's own.
        if key in _PLUGIN_SETTINGS and "/" in text and text.startswith(_WORLD_WRITABLE):
            _error("%s %s lies in a directory anyone may write to: every job would load what is put there" % (key, text))
        if key in _WRITTEN_FILE_SETTINGS and text.startswith(_SYSTEM_TREES):
            _error("%s %s lies in a system directory: every rank of every job would write there" % (key, text))
        checked[key] = text
    return checked


def socket_interface(topology, management_interface):
    """The interface NCCL bootstraps over: the management interface unless it is virtual plumbing."""
    if management_interface and not _NOT_A_SOCKET_INTERFACE.match(management_interface):
        return management_interface
    for nic in (topology or {}).get("ethernet") or []:
        name = nic.get("name") or ""
        if not nic.get("virtual") and nic.get("operstate") == "up" and not _NOT_A_SOCKET_INTERFACE.match(name):
            return name
    return None


def active_ib_ports(topology):
    """(hca, port) for every ACTIVE port, InfiniBand and RoCE alike, in HCA order."""
    ports = []
    for hca in (topology or {}).get("hcas") or []:
        for port in hca.get("ports") or []:
            if port.get("state") == "ACTIVE":
                ports.append((hca, port))
    return ports


def roce_gid_index(ports):
    """The RoCE v2 GID index of the ports' IPv4 addresses, or None where no RoCE port has one."""
    indexes = {}
    for hca, port in ports:
        if port.get("link_layer") != "Ethernet":
            continue
        for gid in port.get("gids") or []:
            if gid.get("type") == "RoCE v2" and gid.get("ipv4"):
                indexes["%s:%s" % (hca["name"], port["port"])] = gid["index"]
                break
    values = sorted(set(indexes.values()))
    if len(values) > 1:
        _error("RoCE ports disagree on the RoCE v2 GID index (%s); set NCCL_IB_GID_INDEX in nccl_settings"
               % ", ".join("%s=%s" % item for item in sorted(indexes.items())))
    return values[0] if values else None


def nccl_settings(topology, management_interface=None, overrides=None, topology_file=None, allow_unknown=False):
    """Settings for /etc/nccl.conf: derived from the probed topology, then inventory overrides on top.

    A key the inventory sets (or sets to null) is not derived at all, so an override also settles
    what could not be derived (RoCE ports that disagree, more ports than NCCL_IB_HCA takes).
    """
    checked = check_overrides(overrides, allow_unknown)
    settings = {}
    interface = socket_interface(topology, management_interface)
    if interface:
        settings["NCCL_SOCKET_IFNAME"] = "=" + interface
    ports = active_ib_ports(topology)
    if ports and "NCCL_IB_HCA" not in checked:
        if len(ports) > MAX_IB_HCA_ENTRIES:
            _error("%d active HCA ports exceed NCCL_IB_HCA's %d entries; set NCCL_IB_HCA in nccl_settings"
                   % (len(ports), MAX_IB_HCA_ENTRIES))
        settings["NCCL_IB_HCA"] = "=" + ",".join("%s:%s" % (hca["name"], port["port"]) for hca, port in ports)
    if ports and "NCCL_IB_GID_INDEX" not in checked:
        gid_index = roce_gid_index(ports)
        if gid_index is not None:
            settings["NCCL_IB_GID_INDEX"] = str(gid_index)
    if topology_file:
        settings["NCCL_TOPO_FILE"] = topology_file
    for key, value in checked.items():
        if value is None:
            settings.pop(key, None)
        else:
            settings[key] = value
    return dict(sorted(settings.items()))


def _nccl_list(text):
    """NCCL's list syntax for interfaces and HCAs: [^][=]item,item... -> (exclude, exact, items)."""
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    return exclude, exact, [item for item in text.split(",") if item]


def _named(name, entry, exact):
    return name == entry if exact else name.startswith(entry)


def _interface_names(topology):
    """The probed network interfaces: Ethernet ones and the HCAs' netdevs (IPoIB, RoCE)."""
    names = [nic.get("name") or "" for nic in topology.get("ethernet") or []]
    return names + [netdev for hca in topology.get("hcas") or [] for netdev in hca.get("netdevs") or []]


def _socket_problem(value, topology):
    """NCCL_SOCKET_IFNAME must leave NCCL a real interface of this host (IPoIB included)."""
    names = _interface_names(topology)
    usable = sorted(name for name in names if not _NOT_A_SOCKET_INTERFACE.match(name))
    if not names:
        return None  # the probe read no network interfaces: nothing to compare with
    exclude, exact, entries = _nccl_list(value)
    chosen = [name for name in names if any(_named(name, entry, exact) for entry in entries) != exclude]
    if any(name in usable for name in chosen):
        return None
    plumbing = sorted(name for name in chosen if name not in usable)
    return "NCCL_SOCKET_IFNAME %s leaves NCCL %s on this host (its interfaces: %s)" % (
        value, "only " + ", ".join(plumbing) + ", which carry no traffic between nodes" if plumbing else "no interface",
        ", ".join(usable) or "none but loopback and virtual ones")


def _hca_problems(value, topology):
    """Every NCCL_IB_HCA entry must name an HCA (and port) the probe found: NCCL skips a typo silently."""
    hcas = {hca.get("name"): [port.get("port") for port in hca.get("ports") or []] for hca in topology.get("hcas") or []}
    exclude, exact, entries = _nccl_list(value)
    if not hcas:
        return [] if exclude else ["NCCL_IB_HCA %s names HCAs, but the probe found none on this host "
                                   "(no /sys/class/infiniband entry): NCCL would fall back to sockets" % value]
    found = ", ".join("%s (ports %s)" % (name, ",".join(str(port) for port in ports)) for name, ports in sorted(hcas.items()))
    problems = []
    for entry in entries:
        name, _sep, port = entry.partition(":")
        matches = [hca for hca in hcas if _named(hca, name, exact)]
        if not matches:
            problems.append("NCCL_IB_HCA entry %s names no HCA of this host (the probe found %s)" % (entry, found))
        elif port and not (port.isdigit() and any(int(port) in hcas[hca] for hca in matches)):
            problems.append("NCCL_IB_HCA entry %s names a port %s does not have (the probe found %s)"
                            % (entry, "/".join(matches), found))
    return problems


def nccl_host_problems(topology, overrides, topology_file_exists=True, management_interface=None):
    """What in the inventory's NCCL settings does not fit this host's probed topology, one message per rule.

    ``topology_file_exists``: whether the file an NCCL_TOPO_FILE override names exists or will be written.
    ``management_interface``: nccl_management_interface, which must be an interface of this host.
    """
    checked = check_overrides(overrides, allow_unknown=True)
    topology = topology or {}
    found = []
    if management_interface and checked.get("NCCL_SOCKET_IFNAME") is None:
        names = _interface_names(topology)
        # It becomes NCCL_SOCKET_IFNAME (tasks/conf.yml): loopback would keep every job on one node.
        if str(management_interface).lstrip("=") in ("lo", "lo0"):
            found.append("nccl_management_interface %s is the loopback interface: jobs across nodes could not connect"
                         % management_interface)
        elif names and management_interface not in names:
            found.append("nccl_management_interface: %s is not an interface of this host (its interfaces: %s)"
                         % (management_interface, ", ".join(sorted(names))))
    problems = []
    if checked.get("NCCL_SOCKET_IFNAME") is not None:
        problems.append(_socket_problem(checked["NCCL_SOCKET_IFNAME"], topology))
    if checked.get("NCCL_IB_HCA") is not None and checked.get("NCCL_IB_DISABLE") != "1":
        problems.extend(_hca_problems(checked["NCCL_IB_HCA"], topology))
    if checked.get("NCCL_TOPO_FILE") is not None and not topology_file_exists:
        problems.append("NCCL_TOPO_FILE %s does not exist on this host and this role will not write it "
                        "(nccl_topology_path with nccl_topology_manage on a GPU node): every job would warn and ignore it"
                        % checked["NCCL_TOPO_FILE"])
    return found + ["nccl_settings: " + problem for problem in problems if problem]


def nccl_discouraged_settings(overrides):
    """The override keys NVIDIA advises against in production."""
    return sorted(key for key in (overrides or {}) if key in DISCOURAGED_SETTINGS)


class FilterModule:
    """NCCL configuration filters."""

    def filters(self):
        return {
            "nccl_settings": nccl_settings,
            "nccl_discouraged_settings": nccl_discouraged_settings,
            "nccl_host_problems": nccl_host_problems,
        }
