# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Sourced (not run) by the scripts that check the collection on a live GPU host (gpu-validate.sh,
# gpu-stack-detect.sh). The caller sets WORK (a scratch directory, emptied here); this sets OUT, REPO,
# PY, SMI, SUMMARY and say(), and points ansible at the checkout and at wheels unpacked in /tmp/site
# (the device host has no package registry).
# shellcheck shell=bash disable=SC2034 # the variables are the caller's

OUT=${OUT:?set OUT to the results directory}
mkdir -p "$OUT"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
SMI=${NVIDIA_SMI:-/usr/local/nvidia/bin/nvidia-smi}
[ -x "$SMI" ] || SMI=$(command -v nvidia-smi || echo nvidia-smi)
# The modules look nvidia-smi up by name as well.
if [ -x "$SMI" ]; then PATH="$(dirname "$SMI"):$PATH"; export PATH; fi
rm -rf "${WORK:?set WORK to a scratch directory}" && mkdir -p "$WORK"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export ANSIBLE_COLLECTIONS_PATH=$REPO/collections ANSIBLE_CONFIG=$REPO/ansible.cfg
export ANSIBLE_LOCAL_TEMP=$WORK/ansible-tmp ANSIBLE_HOME=$WORK/ansible-home ANSIBLE_NOCOLOR=1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
