#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Record -> read-back round trip of topology_facts on a live GPU host (made for the H200 device host:
# Ubuntu 24.04, no systemd). Records what the probe reads into a tarball, reads the tarball back as the
# probe's root and compares the two facts; runs playbooks/record.yml too when ansible is importable.
# Also keeps the raw `nvidia-smi topo -m` and `--query-gpu` outputs and how the parser read them (for the
# corpus in tests/unit/fixtures/nvidia_smi_topo). Changes nothing on the host but files under $OUT and
# $WORK. About 10-30 s. Check `record` of tests/device/run (environment there).
# Writes to $OUT: trainstack-record.tar.gz facts.json facts-replayed.json topo-m.txt query-gpu.csv
# topo-parsed.json record-members.txt summary.txt (and playbook/ with record.yml's output).
# Exit 1 on any FAIL.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

say "## host $(hostname) $(date -u +%FT%TZ) python $PY nvidia-smi $SMI"
status=0

topology_module() { # args_json result_json (the module file run directly: the timing is the probe's alone)
  printf '{"ANSIBLE_MODULE_ARGS": %s}' "$1" > "$WORK/args.json"
  PYTHONPATH=$REPO/collections:$PYTHONPATH "$PY" "$REPO/plugins/modules/topology_facts.py" "$WORK/args.json" > "$2"
}

# 1. Record on the live host, then read the tarball back.
TARBALL=$OUT/trainstack-record.tar.gz
rm -f "$TARBALL"
start=$(date +%s.%N)
topology_module "{\"nvidia_smi_path\": \"$SMI\", \"record\": \"$TARBALL\"}" "$WORK/recorded.json"
say "INFO live probe + record took $(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo '?') s"
topology_module "{\"root\": \"$TARBALL\"}" "$WORK/replayed.json"
"$PY" - "$WORK/recorded.json" "$WORK/replayed.json" "$OUT" <<'PY' | tee -a "$SUMMARY"
import json, sys
recorded, replayed = (json.load(open(path)) for path in sys.argv[1:3])
out = sys.argv[3]
for name, result in (('facts.json', recorded), ('facts-replayed.json', replayed)):
    with open('%s/%s' % (out, name), 'w') as handle:
        json.dump(result.get('ansible_facts', result), handle, indent=1, sort_keys=True)
if recorded.get('failed') or replayed.get('failed'):
    print('FAIL module failed: %s / %s' % (recorded.get('msg'), replayed.get('msg')))
    sys.exit(0)
facts = recorded['ansible_facts']['trainstack_topology']
print('INFO record members: %s, gpus: %d, hcas: %d, distances source: %s' % (
    recorded.get('record_members'), len(facts['gpus']), len(facts['hcas']), facts['distances']['source']))
print('INFO sources: %s' % json.dumps(facts['sources'], sort_keys=True))
print('INFO warnings: %s' % (facts['warnings'] or 'none'))
if replayed['ansible_facts'] == recorded['ansible_facts']:
    print('PASS record -> read back gives identical facts')
else:
    a, b = recorded['ansible_facts']['trainstack_topology'], replayed['ansible_facts']['trainstack_topology']
    print('FAIL record -> read back differs in: %s' % sorted(key for key in set(a) | set(b) if a.get(key) != b.get(key)))
PY
grep -q '^FAIL' "$SUMMARY" && status=1
tar -tzf "$TARBALL" | sort > "$OUT/record-members.txt" 2>/dev/null

# 2. The raw nvidia-smi outputs and how the parser reads them (corpus material).
"$SMI" topo -m > "$OUT/topo-m.txt" 2>&1
"$SMI" --query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,driver_version --format=csv > "$OUT/query-gpu.csv" 2>&1
PYTHONPATH=$REPO/collections:$PYTHONPATH "$PY" - "$OUT/topo-m.txt" "$OUT/topo-parsed.json" <<'PY' | tee -a "$SUMMARY"
import json, sys
from ansible_collections.trainstack.cluster.plugins.module_utils._nvsmi_topo import parse_topo
parsed = parse_topo(open(sys.argv[1], encoding='utf-8', errors='replace').read())
json.dump(parsed, open(sys.argv[2], 'w'), indent=1, sort_keys=True)
print('%s topo -m parsed: gpus %s, nics %s, problems %s' % ('PASS' if parsed['matrix'] and not parsed['problems'] else 'FAIL',
      parsed['gpus'], parsed['nics'], parsed['problems'] or 'none'))
PY
grep -q '^FAIL' "$SUMMARY" && status=1

# 3. The playbook, when ansible is importable.
if "$PY" -c 'import ansible' 2>/dev/null; then
  if playbook "$WORK/playbook.log" playbooks/record.yml -e "record_output_dir=$OUT/playbook"; then
    say "PASS playbooks/record.yml: fetched and read back identical ($OUT/playbook/localhost/)"
  else
    say "FAIL playbooks/record.yml: $(tail -c 600 "$WORK/playbook.log" | tr '\n' ' ')"
    status=1
  fi
  cp "$WORK/playbook.log" "$OUT/playbook.log"
else
  say "SKIP playbooks/record.yml: ansible is not importable by $PY"
fi
say "## done: $(grep -c '^PASS' "$SUMMARY") PASS, $(grep -c '^FAIL' "$SUMMARY") FAIL"
exit $status
