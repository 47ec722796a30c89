#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The pytorch role and its DDP smoke job on a live GPU host, in one go (no Slurm, no systemd, no registry):
#   1. playbooks/pytorch.yml on localhost with pytorch_source=preinstalled (the image's torch), twice: the
#      verify step imports torch, compares its CUDA devices with the probed GPUs and says which NCCL torch
#      jobs use; the launcher, its configuration and the job go under $WORK (nothing is written outside
#      it). Run 2 must report changed=0.
#   2. The DDP smoke job through trainstack-torchrun (torchrun, nccl, one rank per probed GPU), twice:
#      the default small model (300 steps) and a wider one for a throughput figure; then the DeepSpeed
#      ZeRO-1 variant (--deepspeed) where the interpreter can import DeepSpeed, else a SKIP line.
#
# Check `pytorch` of tests/device/run (environment there; NCCL_NVLS_ENABLE=0: NVLink multicast off).
# Writes to $OUT: facts.json (trainstack_gpu_stack with torch's own report), run-1.log, run-2.log,
# ddp-small.txt, ddp-wide.txt, ddp-deepspeed.txt (job outputs), ddp-results.json (the results, checked), summary.txt.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mkdir -p "$WORK/bin" "$WORK/etc" "$WORK/share"
LAUNCHER=$WORK/bin/trainstack-torchrun
export TRAINSTACK_LAUNCH_CONFIG=$WORK/etc/pytorch-launch.json

say "## host $(hostname) $(date -u +%FT%TZ) python $PY ansible $("$PY" -c 'import ansible.release as r; print(r.__version__)' 2>&1)"

# 1. The role, preinstalled, twice.
EXTRA=$(printf '{"pytorch_hosts": "localhost", "pytorch_source": "preinstalled", "pytorch_python": "%s",
  "pytorch_launcher_path": "%s", "pytorch_share_dir": "%s", "pytorch_launch_config_path": "%s"}' \
  "$PY" "$LAUNCHER" "$WORK/share" "$TRAINSTACK_LAUNCH_CONFIG")
status=0
for n in 1 2; do
  (cd "$REPO" && "$PY" -m ansible playbook -i localhost, -c local -e "ansible_python_interpreter=$PY" \
    -e "$EXTRA" playbooks/pytorch.yml > "$OUT/run-$n.log" 2>&1); rc=$?
  recap=$(grep -A1 'PLAY RECAP' "$OUT/run-$n.log" | tail -n 1 | tr -s ' ')
  say "## role run $n exit $rc: $recap"
  if [ "$rc" -ne 0 ]; then
    say "FAIL role run $n"; status=1
    grep -E -A6 'fatal|FAILED' "$OUT/run-$n.log" | head -n 40 | tee -a "$SUMMARY"
  fi
done
if ! grep -A1 'PLAY RECAP' "$OUT/run-2.log" | tail -n 1 | grep -q 'changed=0 '; then
  say "FAIL run 2 changed something"; status=1
fi
say "## what the role reported (run 2)"
grep -E '"msg": "(torch |torch jobs|pytorch_source)' "$OUT/run-2.log" | sed 's/^ *//' | tee -a "$SUMMARY"

# torch's own report as the role read it.
(cd "$REPO" && "$PY" -m ansible adhoc localhost -i localhost, -c local -e "ansible_python_interpreter=$PY" \
  -m trainstack.cluster.gpu_stack_facts -a "python=$PY" --tree "$WORK/tree" > "$WORK/facts.log" 2>&1)
[ -s "$WORK/tree/localhost" ] && cp "$WORK/tree/localhost" "$OUT/facts.json"

# 2. The DDP job with nccl through the installed launcher (no Slurm: rendezvous on this host).
if [ ! -x "$LAUNCHER" ]; then
  say "FAIL the role installed no launcher"; say "RESULT FAIL"; exit 1
fi
run_job() { # name, job arguments...
  local name=$1; shift
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])') \
    timeout 600 "$PY" "$LAUNCHER" run -- "$PY" "$WORK/share/ddp_smoke.py" --backend nccl "$@" > "$OUT/ddp-$name.txt" 2>&1
  local rc=$?
  say "## DDP $name exit $rc: $(grep -o 'TRAINSTACK_DDP_RESULT .*' "$OUT/ddp-$name.txt" | cut -c1-400)"
  [ "$rc" -eq 0 ] || { status=1; tail -n 30 "$OUT/ddp-$name.txt" | tee -a "$SUMMARY"; }
}
run_job small --steps 300
run_job wide --steps 300 --width 4096 --batch 1024
# The DeepSpeed ZeRO-1 variant where the interpreter has DeepSpeed (carried in as a wheel on the lent machines).
if "$PY" -c 'import deepspeed' >/dev/null 2>&1; then
  say "## deepspeed $("$PY" -c 'import deepspeed; print(deepspeed.__version__)' 2>/dev/null)"
  run_job deepspeed --steps 300 --deepspeed
else
  say "SKIP deepspeed: not importable by $PY"
fi

# 3. The results, checked by the collection's own verifier (the filter the lab's verify uses).
PYTHONPATH=$REPO/collections:${PYTHONPATH:-} "$PY" - "$OUT" <<'PYEOF' | tee -a "$SUMMARY"
import json, os, sys
from ansible_collections.trainstack.cluster.plugins.filter.pytorch import pytorch_ddp_result
out = sys.argv[1]
results = {}
for name in ('small', 'wide', 'deepspeed'):
    if name == 'deepspeed' and not os.path.exists('%s/ddp-%s.txt' % (out, name)):
        continue
    with open('%s/ddp-%s.txt' % (out, name), encoding='utf-8') as handle:
        results[name] = pytorch_ddp_result(handle.read(), backend='nccl')
    print('check %s: %s %s' % (name, 'OK' if results[name]['ok'] else 'FAIL', '; '.join(results[name]['problems'])))
with open(out + '/ddp-results.json', 'w', encoding='utf-8') as handle:
    json.dump(results, handle, indent=2, sort_keys=True)
sys.exit(0 if all(item['ok'] for item in results.values()) else 1)
PYEOF
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if [ "$status" -eq 0 ]; then say "RESULT OK"; else say "RESULT FAIL"; fi
exit "$status"
