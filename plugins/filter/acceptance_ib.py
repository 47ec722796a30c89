# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest between pairs of nodes (controller side, pure): the pairs, the command lines, the verdict.

The built-in acceptance hook ``ib_send_bw_pairs`` (roles/acceptance/tasks/hooks/ib_send_bw_pairs.yml) runs
``ib_send_bw`` and ``ib_send_lat`` between pairs of the play's nodes that have ACTIVE RDMA ports: in a ring,
so each node is server once and client once (n pairs for n > 2 nodes, one pair for two). The runs go in
rounds: pairs that share no node run at the same time (the ring's pairs in two groups, three for an odd
ring), one port pair of a node after the other, so the number of rounds does not grow with the nodes and no
two tests share an HCA or its PCIe switch. The bandwidth is judged against a fraction of the port's line rate
(the lower of the two sides' rate in sysfs), the latency against an optional bound; a miss is ``repeat``
until the policy's attempts are used up, like the all-reduce busbw.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.trainstack.cluster.plugins.filter.acceptance import worst
from ansible_collections.trainstack.cluster.plugins.filter.nccl import active_ib_ports
from ansible_collections.trainstack.cluster.plugins.module_utils import _perftest

TOOLS = {'bw': 'ib_send_bw', 'lat': 'ib_send_lat'}


def _error(message):
    raise AnsibleFilterError('acceptance_ib: ' + message)


def _active_ports(topology, include_roce):
    """ACTIVE ports of a node (InfiniBand; Ethernet too with include_roce), by HCA name then port number."""
    layers = ('InfiniBand', 'Ethernet') if include_roce else ('InfiniBand',)
    ports = [{'hca': hca['name'], 'port': port['port'], 'link_layer': port.get('link_layer'),
              'rate_gbps': (port.get('speed_mbps') or 0) / 1000.0, 'gid_index': _roce_gid_index(port)}
             for hca, port in active_ib_ports(topology) if port.get('link_layer') in layers]
    return sorted(ports, key=lambda port: (port['hca'], port['port']))


def _roce_gid_index(port):
    """The GID index perftest needs on a RoCE port (-x): a RoCE v2 GID, one with an IPv4 address first.

    Without it perftest picks GID 0 (RoCE v1, link-local), which routed RoCE fabrics do not carry. rdma_cm
    (-R) is not used instead: it wants the RoCE interface's address, not the management one."""
    if port.get('link_layer') != 'Ethernet':
        return None
    v2 = [gid for gid in port.get('gids') or [] if gid.get('type') == 'RoCE v2']
    v2.sort(key=lambda gid: (gid.get('ipv4') is None, gid['index']))
    return v2[0]['index'] if v2 else None


def _pair_ports(client_ports, server_ports):
    """Port pairs: the same HCA name and port number where both sides have it, the rest by index (same link layer)."""
    by_name = {(port['hca'], port['port']): port for port in server_ports}
    links, left_client = [], []
    used = set()
    for port in client_ports:
        twin = by_name.get((port['hca'], port['port']))
        if twin is not None and twin['link_layer'] == port['link_layer']:
            links.append((port, twin))
            used.add((twin['hca'], twin['port']))
        else:
            left_client.append(port)
    left_server = [port for port in server_ports if (port['hca'], port['port']) not in used]
    unpaired = []
    for layer in sorted({port['link_layer'] for port in left_client + left_server}):
        clients = [port for port in left_client if port['link_layer'] == layer]
        servers = [port for port in left_server if port['link_layer'] == layer]
        links += list(zip(clients, servers))
        unpaired += [('client', port) for port in clients[len(servers):]] + [('server', port) for port in servers[len(clients):]]
    return links, unpaired


def link_name(client, client_port, server, server_port):
    return '%s %s/%s -> %s %s/%s' % (client, client_port['hca'], client_port['port'], server, server_port['hca'], server_port['port'])


def acceptance_ib_pairs(topologies, addresses=None, include_roce=False, fallback_addresses=None, exclude=None):
    """The ring of node pairs with ACTIVE ports and their port pairs.

    ``topologies`` maps host names to trainstack_topology facts; ``addresses`` (host_addresses) and then
    ``fallback_addresses`` give the address a client reaches the server's perftest on (its TCP exchange),
    else the host name. Hosts in ``exclude`` (perftest missing) are left out of the ring.
    """
    if not isinstance(topologies, dict):
        _error('topologies must map host names to trainstack_topology facts, got %r' % (topologies,))
    exclude = set(exclude or [])
    ports = {host: _active_ports(topology, include_roce) for host, topology in topologies.items()}
    nodes = sorted(host for host, found in ports.items() if found)
    ring = [host for host in nodes if host not in exclude]
    if len(ring) < 2:
        couples = []
    elif len(ring) == 2:
        couples = [(ring[0], ring[1])]
    else:
        couples = [(ring[index], ring[(index + 1) % len(ring)]) for index in range(len(ring))]
    pairs = []
    for index, (client, server) in enumerate(couples):
        address = (addresses or {}).get(server) or (fallback_addresses or {}).get(server) or server
        matched, unpaired = _pair_ports(ports[client], ports[server])
        links = []
        for client_port, server_port in matched:
            links.append({
                'name': link_name(client, client_port, server, server_port),
                'client': client, 'client_hca': client_port['hca'], 'client_port': client_port['port'],
                'server': server, 'server_hca': server_port['hca'], 'server_port': server_port['port'],
                'link_layer': client_port['link_layer'],
                'rate_gbps': min(client_port['rate_gbps'], server_port['rate_gbps']),
                'client_gid_index': client_port['gid_index'], 'server_gid_index': server_port['gid_index'],
            })
        # Pairs of one group share no node: alternate around the ring; an odd ring's last pair needs a third group.
        group = 2 if len(couples) % 2 and index == len(couples) - 1 and len(couples) > 1 else index % 2
        pairs.append({'client': client, 'server': server, 'server_address': address, 'links': links, 'group': group,
                      'unpaired': ['%s %s/%s' % (client if side == 'client' else server, port['hca'], port['port'])
                                   for side, port in unpaired]})
    return {'nodes': nodes, 'ring': ring, 'pairs': pairs}


def _argv(tool, link, side, settings, address=None):
    timeout = int(settings['timeout_s'])
    size = int(settings['bw_size'] if tool == 'ib_send_bw' else settings['lat_size'])
    hca, port, gid = ((link['server_hca'], link['server_port'], link['server_gid_index']) if side == 'server'
                      else (link['client_hca'], link['client_port'], link['client_gid_index']))
    # -F: run even where the CPU frequency governor is not "performance" (perftest refuses otherwise).
    argv = ['timeout', str(timeout), tool, '-d', hca, '-i', str(port), '-F', '-s', str(size), '-p', str(int(settings['tcp_port']))]
    if tool == 'ib_send_bw':
        argv.append('--report_gbits')
    if gid is not None:
        argv += ['-x', str(gid)]
    if address is not None:
        argv.append(address)
    return argv


def acceptance_ib_runs(plan, settings, links=None):
    """The perftest runs in rounds: per group of pairs, per port pair index, ib_send_bw then ib_send_lat.

    The runs of one round share no node. ``settings``: bw_size, lat_size (bytes), tcp_port, timeout_s. With
    ``links`` (acceptance_ib_links of the attempts so far) only the port pairs still to ``repeat`` are run again.
    """
    for key in ('bw_size', 'lat_size', 'tcp_port', 'timeout_s'):
        if (settings or {}).get(key) is None:
            _error('settings need %s' % key)
    again = None if links is None else {link['name'] for link in links if link['status'] == 'repeat'}
    pairs = (plan or {}).get('pairs') or []
    rounds = []
    for group in sorted({pair['group'] for pair in pairs}):
        members = [pair for pair in pairs if pair['group'] == group]
        for index in range(max(len(pair['links']) for pair in members)):
            for test, tool in sorted(TOOLS.items()):
                runs = []
                for pair in members:
                    if index >= len(pair['links']) or (again is not None and pair['links'][index]['name'] not in again):
                        continue
                    link = pair['links'][index]
                    runs.append({'name': '%s %s' % (tool, link['name']), 'link': link['name'], 'test': test,
                                 'client': link['client'], 'server': link['server'],
                                 'server_argv': _argv(tool, link, 'server', settings),
                                 'client_argv': _argv(tool, link, 'client', settings, pair['server_address'])})
                if runs:
                    rounds.append(runs)
    return rounds


def _measure(result, test, size):
    """(figure, problem) of one client run: Gb/s of ib_send_bw or t_typical (the median, in us) of ib_send_lat."""
    tool = TOOLS[test]
    if not result or result.get('rc') is None:
        return None, '%s did not run on the client%s' % (tool, (': ' + str(result['msg'])[:200]) if (result or {}).get('msg') else '')
    if str(result.get('rc')) == '124':
        return None, '%s timed out' % tool
    if str(result.get('rc')) != '0':
        said = ((result.get('stderr') or '').strip() or (result.get('stdout') or '').strip()).splitlines()
        return None, '%s exited with %s%s' % (tool, result.get('rc'), (': ' + said[-1][:200]) if said else '')
    try:
        report = _perftest.parse(result.get('stdout'))
    except _perftest.PerftestParseError as exc:
        return None, '%s: %s' % (tool, exc)
    row = next((row for row in report['rows'] if row['bytes'] == int(size)), None)
    if row is None:
        return None, '%s printed no row for %s bytes' % (tool, size)
    return (row['bw_average_gbps'] if test == 'bw' else row['t_typical']), None


def acceptance_ib_records(runs, results, attempt, settings):
    """The figures of a round's runs, read from each client's result (rc, stdout, stderr) with the perftest parser.

    Only the figure or the problem is kept (not the report), so the facts stay small on large clusters.
    """
    sizes = {'bw': settings['bw_size'], 'lat': settings['lat_size']}
    records = []
    for run in runs or []:
        figure, problem = _measure((results or {}).get(run['client']), run['test'], sizes[run['test']])
        records.append({'link': run['link'], 'test': run['test'], 'attempt': int(attempt), 'value': figure, 'problem': problem})
    return records


def acceptance_ib_links(records, plan, min_bw_fraction=0.9, max_latency_us=None, attempts=3):
    """Verdict per port pair from the figures of every attempt (records of acceptance_ib_records).

    Bandwidth: the best attempt >= min_bw_fraction x the link's rate; latency: the best attempt <= max_latency_us
    (not set: reported). A miss is ``repeat`` while fewer than ``attempts`` attempts ran, then ``fail``; a run
    that broke (exit status, no report) fails at once.
    """
    fraction = float(min_bw_fraction)
    if not 0 < fraction <= 1:
        _error('min_bw_fraction must be in (0, 1], got %r' % (min_bw_fraction,))
    max_lat = None if max_latency_us is None else float(max_latency_us)
    # Indexed once: scanning every record for every link grows with the square of the cluster (issue 30).
    by_link = {}
    for record in records or []:
        by_link.setdefault(record.get('link'), []).append(record)
    verdicts = []
    for pair in (plan or {}).get('pairs') or []:
        for link in pair['links']:
            own = by_link.get(link['name'], [])
            done = len({record.get('attempt') for record in own})
            values = {'bw': [], 'lat': []}
            problems = []
            for record in own:
                if record.get('problem'):
                    problems.append('%s (attempt %s)' % (record['problem'], record.get('attempt')))
                else:
                    values[record['test']].append(record['value'])
            threshold = round(fraction * link['rate_gbps'], 3)
            entry = dict(link, threshold_gbps=threshold, attempts=done, bw_values_gbps=values['bw'], lat_values_us=values['lat'],
                         bw_gbps=max(values['bw']) if values['bw'] else None,
                         latency_us=min(values['lat']) if values['lat'] else None, max_latency_us=max_lat)
            figures = []
            if entry['bw_gbps'] is not None:
                figures.append('%.1f Gb/s' % entry['bw_gbps'])
            if entry['latency_us'] is not None:
                figures.append('%.2f us' % entry['latency_us'])
            misses = []
            if not done:
                entry.update(status='repeat', reason='not run yet')
            elif problems:
                entry.update(status='fail', reason='; '.join(problems))
            else:
                if entry['bw_gbps'] is None or entry['bw_gbps'] < threshold:
                    misses.append('ib_send_bw %s < %.1f (%g of %g Gb/s)' % (
                        '-' if entry['bw_gbps'] is None else '%.1f Gb/s' % entry['bw_gbps'], threshold, fraction, link['rate_gbps']))
                if max_lat is not None and (entry['latency_us'] is None or entry['latency_us'] > max_lat):
                    misses.append('ib_send_lat %s > %g us' % (
                        '-' if entry['latency_us'] is None else '%.2f us' % entry['latency_us'], max_lat))
                if not misses:
                    entry.update(status='pass', reason=', '.join(figures))
                elif done < int(attempts):
                    entry.update(status='repeat', reason='%s on attempt %d of %d: repeat to rule out noise' % (
                        ', '.join(misses), done, int(attempts)))
                else:
                    entry.update(status='fail', reason='%s in all %d attempts' % (', '.join(misses), done))
            verdicts.append(entry)
    return verdicts


def acceptance_ib_node_check(links, node, plan=None):
    """The node's ``ib_send_bw_pairs`` check: the worst of the port pairs it is client or server of.

    With the ``plan``, ACTIVE ports of the node that found no partner on the other side are named (untested).
    """
    own = [link for link in links or [] if node in (link['client'], link['server'])]
    keep = ('name', 'client', 'client_hca', 'client_port', 'server', 'server_hca', 'server_port', 'link_layer', 'rate_gbps',
            'threshold_gbps', 'bw_gbps', 'latency_us', 'attempts', 'status')
    untested = sorted({port for pair in (plan or {}).get('pairs') or [] for port in pair.get('unpaired') or []
                       if port.split(' ')[0] == node})
    data = {'links': [{key: link.get(key) for key in keep} for link in own], 'untested_ports': untested}
    note = '; untested (no partner port): %s' % ', '.join(untested) if untested else ''
    if not own:
        return dict(data, check='ib_send_bw_pairs', status='skip', reason='%s is in no tested pair%s' % (node, note))
    status = worst(link['status'] for link in own)
    if status in ('fail', 'repeat'):
        reason = '; '.join('%s: %s' % (link['name'], link['reason']) for link in own if link['status'] in ('fail', 'repeat'))
    else:
        bws = [link['bw_gbps'] for link in own if link['bw_gbps'] is not None]
        lats = [link['latency_us'] for link in own if link['latency_us'] is not None]
        reason = '%d port pairs passed: lowest ib_send_bw %.1f Gb/s, highest ib_send_lat %.2f us' % (
            len(own), min(bws) if bws else 0, max(lats) if lats else 0)
    return dict(data, check='ib_send_bw_pairs', status=status, reason=reason + note)


class FilterModule:
    """perftest pair filters of the acceptance role."""

    def filters(self):
        return {
            'acceptance_ib_pairs': acceptance_ib_pairs,
            'acceptance_ib_runs': acceptance_ib_runs,
            'acceptance_ib_records': acceptance_ib_records,
            'acceptance_ib_links': acceptance_ib_links,
            'acceptance_ib_node_check': acceptance_ib_node_check,
        }
