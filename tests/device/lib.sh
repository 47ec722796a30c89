# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Sourced (not run) by every check of the device layer (tests/device/checks/*.sh), which tests/device/run starts
# with OUT (the check's results directory) and WORK (its scratch directory, emptied here) set. Sets REPO, PY, SMI,
# SUMMARY, say() and skip(), and points ansible at the checkout (ansible-core importable by PY: the runner unpacks
# carried wheels in front of PYTHONPATH). Nothing here names a machine's paths: PYTHON and NVIDIA_SMI say where the
# interpreter with torch and nvidia-smi are when PATH does not find them.
# shellcheck shell=bash disable=SC2034 # the variables are the caller's

OUT=${OUT:?set OUT to the results directory}
mkdir -p "$OUT"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-$(command -v python3)}
SMI=${NVIDIA_SMI:-$(command -v nvidia-smi || echo nvidia-smi)}
# The modules look nvidia-smi up by name as well.
if [ -x "$SMI" ]; then PATH="$(dirname "$SMI"):$PATH"; export PATH; fi
rm -rf "${WORK:?set WORK to a scratch directory}" && mkdir -p "$WORK"
export ANSIBLE_COLLECTIONS_PATH=$REPO/collections ANSIBLE_CONFIG=$REPO/ansible.cfg
export ANSIBLE_LOCAL_TEMP=$WORK/ansible-tmp ANSIBLE_HOME=$WORK/ansible-home ANSIBLE_NOCOLOR=1
export ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default
# NVLink multicast stays off on shared GPU hosts (a program that uses it can take the host's GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
# A check that cannot run here says why and exits 77 (the runner counts it as skipped, never as passed).
skip() { say "SKIP $*"; exit 77; }
# ansible-playbook against this host, the way a site runs it with `-i <gpu-host>,` (here a local connection).
playbook() { # log playbook [ansible-playbook arguments...]
  local log=$1 play=$2
  shift 2
  (cd "$REPO" && "$PY" -m ansible playbook -i localhost, -c local -e "ansible_python_interpreter=$PY" "$@" \
    "$play" > "$log" 2>&1)
}
recap() { grep -A1 'PLAY RECAP' "$1" | tail -n 1 | tr -s ' '; }
gpu_query() { "$SMI" --query-gpu="$1" --format=csv,noheader | head -n 1; }
gpu_count() { "$SMI" --query-gpu=index --format=csv,noheader | grep -c .; }
# One of the collection's modules on this host through ansible (ad-hoc, its JSON result via --tree).
module() { # name args(key=value or JSON) result_json
  rm -rf "$WORK/tree"
  (cd "$REPO" && "$PY" -m ansible adhoc localhost -i localhost, -c local -e "ansible_python_interpreter=$PY" \
    -m "trainstack.cluster.$1" -a "$2" --tree "$WORK/tree" > "$WORK/$1.log" 2>&1)
  if [ -s "$WORK/tree/localhost" ]; then
    cp "$WORK/tree/localhost" "$3"
  else
    say "FAIL $1 returned nothing: $(tail -c 600 "$WORK/$1.log" | tr '\n' ' ')"
    return 1
  fi
}
# nvidia-smi as read independently of the modules, for gpu_validate_report.py to compare the facts with.
nvidia_smi_snapshot() { # file
  {
    echo "## query"; "$SMI" --query-gpu=index,pci.bus_id,uuid,name,compute_cap,memory.total --format=csv,noheader,nounits
    echo "## topo -m"; "$SMI" topo -m
    echo "## nvlink -s"; "$SMI" nvlink -s
  } > "$1" 2>&1
}
