#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Compares the gres.conf the slurm role writes from probed topology (slurm_gres_autodetect "off":
# explicit File=/dev/nvidiaN Cores=... lines) with what Slurm itself detects on the same GPU host
# (AutoDetect=nvidia, Slurm >= 23.11's gpu/nvidia plugin: /proc/driver/nvidia and sysfs, no NVML).
# Both go through `slurmd -G`, which parses the configuration, loads the GRES plugins and prints
# every GPU it would offer, then exits: no daemon, no systemd.
#
# Check `gres` of tests/device/run, not run by default: SLURM_PREFIX holds a Slurm 24.11 build (sbin/slurmd,
# lib/slurm/*.so); without it the check is skipped.
# Writes to $OUT: gres-explicit.conf (the role's), node.conf (the role's NodeName line), slurmd-G-explicit.txt,
# slurmd-G-autodetect.txt, nvidia-information.txt (the driver's /proc entries), summary.txt.
# Exit 1 when the two disagree on any GPU's device file or cores.
set -uo pipefail

# shellcheck source=tests/device/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
[ -n "${SLURM_PREFIX:-}" ] || skip "SLURM_PREFIX (a Slurm build with sbin/slurmd) is not set"
[ -x "$SLURM_PREFIX/sbin/slurmd" ] || skip "no slurmd in SLURM_PREFIX ($SLURM_PREFIX/sbin/slurmd)"

export LD_LIBRARY_PATH=$SLURM_PREFIX/lib:$SLURM_PREFIX/lib/slurm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
say "## host $(hostname) $(date -u +%FT%TZ) $("$SLURM_PREFIX/sbin/slurmd" -V 2>&1)"
for f in /proc/driver/nvidia/gpus/*/information; do
  echo "### $f"
  cat "$f"
done > "$OUT/nvidia-information.txt" 2>&1
say "## driver minor numbers: $(grep -h '^Device Minor' /proc/driver/nvidia/gpus/*/information | tr -s ' ' | paste -sd ';' -)"

# 1. The role's rendering (tests/device/render-slurm-node.yml): topology_facts, then the slurm role's own node
#    definitions and gres.conf template, this host being the only compute node.
cat > "$WORK/inventory.ini" <<EOF
[slurm_controller]
localhost
[slurm_compute]
localhost
[all:vars]
ansible_connection=local
ansible_python_interpreter=$PY
EOF
if ! (cd "$REPO" && "$PY" -m ansible playbook -i "$WORK/inventory.ini" tests/device/render-slurm-node.yml \
        -e "render_dir=$WORK" > "$OUT/render.log" 2>&1); then
  say "## rendering failed:"; tail -n 30 "$OUT/render.log" | tee -a "$SUMMARY"; exit 1
fi
cp "$WORK/gres.conf" "$OUT/gres-explicit.conf" && cp "$WORK/node.conf" "$OUT/node.conf"
say "## the role's node line: $(cat "$OUT/node.conf")"
say "## the role's gres.conf:"; grep -v '^#' "$OUT/gres-explicit.conf" | tee -a "$SUMMARY"

# 2. slurmd -G with each gres.conf.
run_slurmd_g() { # name gres.conf-content
  local dir=$WORK/$1
  mkdir -p "$dir/spool" "$dir/state"
  # Slurm names the node as the role does: NodeName=localhost, with the role's CPUs/RealMemory/Gres.
  cat > "$dir/slurm.conf" <<EOF
ClusterName=compare
SlurmctldHost=localhost
SlurmUser=root
# Nothing is sent anywhere: no authentication needed.
AuthType=auth/none
CredType=cred/none
PluginDir=$SLURM_PREFIX/lib/slurm
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
$(cat "$OUT/node.conf")
PartitionName=all Nodes=ALL Default=YES
EOF
  printf '%s\n' "$2" > "$dir/gres.conf"
  echo "CgroupPlugin=disabled" > "$dir/cgroup.conf"
  "$SLURM_PREFIX/sbin/slurmd" -G -N localhost -f "$dir/slurm.conf" > "$OUT/slurmd-G-$1.txt" 2>&1
  echo "## slurmd -G ($1) exit $?" >> "$OUT/slurmd-G-$1.txt"
  grep -o 'Gres Name=gpu .*' "$OUT/slurmd-G-$1.txt" | sed 's/ ID=[0-9]*//'
}
explicit=$(run_slurmd_g explicit "$(cat "$OUT/gres-explicit.conf")")
autodetect=$(run_slurmd_g autodetect "AutoDetect=nvidia")
say "## slurmd -G, the role's gres.conf:"; say "${explicit:-(none)}"
say "## slurmd -G, AutoDetect=nvidia:"; say "${autodetect:-(none)}"

# 3. Same device files and cores per GPU (Type comes from the role; autodetect names it from the model).
key() { sed -E 's/.*(File=[^ ]+).*(Cores=[^ ]+).*/\1 \2/' | sort; }
if [ -n "$explicit" ] && [ "$(echo "$explicit" | key)" = "$(echo "$autodetect" | key)" ]; then
  say "RESULT OK: the role's File=/Cores= match Slurm's own detection: $(echo "$explicit" | key | paste -sd ';' -)"
else
  say "RESULT MISMATCH: role $(echo "$explicit" | key | paste -sd ';' -) vs autodetect $(echo "$autodetect" | key | paste -sd ';' -)"
  exit 1
fi
