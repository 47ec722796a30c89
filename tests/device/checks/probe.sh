#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The probe on a live GPU host: topology_facts and gpu_stack_facts through ansible (ad-hoc against this host), then
# the facts compared with nvidia-smi and sysfs read independently (tests/device/gpu_validate_report.py facts).
# Changes nothing. A few seconds. Check `probe` of tests/device/run (environment there).
# Writes to $OUT: facts.json (topology_facts' result), gpu-stack.json (gpu_stack_facts'), nvidia-smi.txt, summary.txt.
# Exit 1 on any FAIL.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"


say "## host $(hostname) $(date -u +%FT%TZ) python $PY ansible $("$PY" -c 'import ansible.release as r; print(r.__version__)' 2>&1)"
module topology_facts "nvidia_smi_path=$SMI" "$OUT/facts.json" || exit 1
module gpu_stack_facts "nvidia_smi_path=$SMI" "$OUT/gpu-stack.json" || exit 1
nvidia_smi_snapshot "$OUT/nvidia-smi.txt"
say "## facts vs nvidia-smi and sysfs"
"$PY" "$REPO/tests/device/gpu_validate_report.py" facts "$OUT/facts.json" "$OUT/nvidia-smi.txt" | tee -a "$SUMMARY"
status=${PIPESTATUS[0]}
"$PY" - "$OUT/gpu-stack.json" <<'PY' | tee -a "$SUMMARY"
import json, sys
facts = json.load(open(sys.argv[1]))['ansible_facts']['trainstack_gpu_stack']
print('INFO driver %s, CUDA %s (%s), NCCL %s (%s), torch %s' % (
    facts['driver']['version'], facts['cuda']['version'], facts['cuda']['source'], facts['nccl']['version'],
    facts['nccl']['source'], facts['pytorch']['version']))
PY
if [ "$status" -eq 0 ]; then say "RESULT OK"; else say "RESULT FAIL"; fi
exit "$status"
