# shellcheck shell=bash
# Prints the cgroup confinement of the job step it runs in: the step's cpuset and the job's memory limit
# (cgroup v1 or v2).
set -eu
if grep -q '^[0-9]*:cpuset:' /proc/self/cgroup; then
  cpath=$(awk -F: '$2 == "cpuset" {print $3}' /proc/self/cgroup)
  mpath=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
  cpus=$(cat "/sys/fs/cgroup/cpuset$cpath/cpuset.cpus")
  mem=$(cat "/sys/fs/cgroup/memory${mpath%%/step_*}/memory.limit_in_bytes")
else
  cpath=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
  cpus=$(cat "/sys/fs/cgroup$cpath/cpuset.cpus.effective")
  mem=$(cat "/sys/fs/cgroup${cpath%%/step_*}/memory.max")
fi
echo "cgroup=$cpath cpus=$cpus mem=$mem"
