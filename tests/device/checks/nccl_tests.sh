#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# nccl-tests built on a live GPU host by the collection's nccl_tests role, as a site builds it: source from
# NCCL_TESTS_SOURCE (a git bundle or mirror of upstream; the role's default, upstream git, where it is not set) at the
# role's pinned commit, CUDA from the host (nvcc on PATH), NCCL from the host's PyTorch wheel (nvidia/nccl in
# PYTHON's site-packages) unless NCCL_HOME is set, MPI off, NVCC_GENCODE from the GPUs the probe finds. Run twice:
# the second run must build nothing (changed=0). Then all_reduce_perf runs once on every GPU, 8 B .. 4 GiB x2
# (nccl-tests' own sweep, a real output for the parser's corpus), and its path is left for the validate check.
# Check `nccl_tests` of tests/device/run (environment there; NCCL_TESTS_SOURCE, NCCL_HOME, NCCL_TESTS_VARS: a JSON
# object of further role variables).
# Writes to $OUT: run-1.log, run-2.log, all_reduce_perf.txt, all_reduce_perf.path, build.json (the build's figures:
# seconds, prefix, binaries), summary.txt. Exit 1 when the build or a run fails, 77 when the role is not there.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
[ -d "$REPO/roles/nccl_tests" ] || skip "the nccl_tests role is not in this checkout"

GPUS=$(gpu_count)
NCCL_HOME=${NCCL_HOME:-$("$PY" -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])' 2>/dev/null)}
NVCC=$(command -v nvcc || echo "")
say "## host $(hostname) $(date -u +%FT%TZ): $GPUS x $(gpu_query name), compute capability $(gpu_query compute_cap)"
say "## nvcc ${NVCC:-not found}: $("${NVCC:-false}" --version 2>/dev/null | grep -o 'release [0-9.]*')"
say "## NCCL ${NCCL_HOME:-not found}: $(find "${NCCL_HOME:-/nonexistent}/lib" -name 'libnccl.so*' -printf '%f ' 2>/dev/null)"
say "## source ${NCCL_TESTS_SOURCE:-upstream git, the default of the role}"
[ -n "$NVCC" ] || { say "FAIL no nvcc on PATH"; exit 1; }
[ -n "$NCCL_HOME" ] || { say "FAIL no NCCL: set NCCL_HOME (nvidia/nccl not importable by $PY)"; exit 1; }

# The role's variables, as an inventory of this host would set them.
"$PY" - "$WORK/vars.json" "$NCCL_HOME" "$(dirname "$(dirname "$(readlink -f "$NVCC")")")" "${NCCL_TESTS_SOURCE:-}" \
  "${NCCL_TESTS_VARS:-}" <<'PY'
import json, sys
path, nccl_home, cuda_home, source, more = sys.argv[1:6]
# MPI=0 (one host, no launcher); NCCL from the wheel torch uses; the pinned commit is the role's default.
variables = {'nccl_tests_hosts': 'localhost', 'nccl_tests_mpi_home': '',
             'nccl_tests_cuda_home': cuda_home, 'nccl_tests_nccl_home': nccl_home}
if source:
    variables.update({'nccl_tests_source': 'git', 'nccl_tests_git_url': source})
variables.update(json.loads(more or '{}'))
json.dump(variables, open(path, 'w'), indent=1, sort_keys=True)
print(json.dumps(variables, sort_keys=True))
PY
play=$REPO/playbooks/nccl_tests.yml
if [ ! -f "$play" ]; then
  # No playbook of its own: the role on this host, as a site's play would apply it.
  play=$WORK/nccl_tests.yml
  printf -- '- name: nccl-tests\n  hosts: localhost\n  gather_facts: true\n  roles:\n    - role: trainstack.cluster.nccl_tests\n' > "$play"
fi
status=0
for n in 1 2; do
  started=$SECONDS
  # -v: the role's own report (build id, make arguments, ldd) is in the log.
  playbook "$OUT/run-$n.log" "$play" -v -e "@$WORK/vars.json"; rc=$?
  say "## run $n exit $rc in $((SECONDS - started)) s: $(recap "$OUT/run-$n.log")"
  echo "$((SECONDS - started))" > "$WORK/seconds-$n"
  if [ "$rc" -ne 0 ]; then
    status=1; grep -E -A12 'fatal|FAILED' "$OUT/run-$n.log" | head -n 60 | tee -a "$SUMMARY"; break
  fi
done
[ "$status" -eq 0 ] && ! recap "$OUT/run-2.log" | grep -q 'changed=0 ' && { say "FAIL run 2 changed something"; status=1; }
[ "$status" -eq 0 ] || { say "RESULT FAIL"; exit 1; }

# Where the role put all_reduce_perf: the prefix its check reported (build_artifact_prefixes' current).
binary=$(grep -o '/[^" ]*nccl-tests/current/bin/all_reduce_perf' "$OUT/run-2.log" | head -n 1)
# build_artifact_root's default.
[ -n "$binary" ] || binary=/opt/trainstack/nccl-tests/current/bin/all_reduce_perf
say "## the role: $(grep -o 'nccl-tests 2[^"]*' "$OUT/run-2.log" | head -n 1)"
if [ -z "$binary" ] || [ ! -x "$binary" ]; then say "FAIL no all_reduce_perf after the build"; say "RESULT FAIL"; exit 1; fi
echo "$binary" > "$OUT/all_reduce_perf.path"
prefix=$(dirname "$(dirname "$(readlink -f "$binary")")")
say "## built: $prefix: $(find "$prefix/bin" -maxdepth 1 -type f -name '*_perf' -printf '%f ' | wc -w) binaries"
say "## $(ldd "$binary" 2>&1 | grep -E 'libnccl|libcudart' | tr -s ' \t' ' ' | paste -sd ';' -)"

# One run of nccl-tests' own sweep, verbatim.
timeout 300 "$binary" -b 8 -e 4G -f 2 -g "$GPUS" > "$OUT/all_reduce_perf.txt" 2>&1; rc=$?
say "## all_reduce_perf -b 8 -e 4G -f 2 -g $GPUS exit $rc: $(grep -c '^ *[0-9]' "$OUT/all_reduce_perf.txt") rows"
grep -E '^#|Avg bus' "$OUT/all_reduce_perf.txt" | tail -n 4 | tee -a "$SUMMARY"
"$PY" - "$OUT/build.json" "$prefix" "$(cat "$WORK/seconds-1")" "$(cat "$WORK/seconds-2")" "$rc" <<'PY'
import json, os, sys
path, prefix, first, second, rc = sys.argv[1:6]
json.dump({'prefix': prefix, 'binaries': sorted(name for name in os.listdir(os.path.join(prefix, 'bin')) if name.endswith('_perf')),
           'play_seconds_first_run': int(first), 'play_seconds_second_run': int(second), 'all_reduce_perf_exit': int(rc)},
          open(path, 'w'), indent=1, sort_keys=True)
PY
[ "$rc" -eq 0 ] || { say "FAIL all_reduce_perf exited $rc"; say "RESULT FAIL"; exit 1; }
say "RESULT OK"
