#!/usr/bin/env bash
# Prepare (or only check) hosts for `manager: ssh`: the same Python environment at the same path
# as on this machine, with sweeper and its exact package versions, and Java 17+.
#
#   deploy/prepare-host.sh [--install] [-l USER] [-p PORT] [-i KEY] [-k KNOWN_HOSTS] HOST...
#
# Without --install it only checks each host and says what is missing. With --install it builds a
# wheel of this checkout, copies it with a `pip freeze` of .venv to each host, and creates
# the environment there at the same path (python3 -m venv, pip install). Java is never installed
# (it needs root): the check prints the apt-get line. Host keys must already be trusted
# (known_hosts): this script never accepts a new host key on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

install=0
# only -o options, so that ssh and scp take them alike
ssh_options=(-o BatchMode=yes -o ConnectTimeout=10 -o StrictHostKeyChecking=yes)
while [ $# -gt 0 ]; do
  case "$1" in
    --install) install=1 ;;
    -l) ssh_options+=(-o "User=$2"); shift ;;
    -p) ssh_options+=(-o "Port=$2"); shift ;;
    -i) ssh_options+=(-o IdentitiesOnly=yes -o "IdentityFile=$2"); shift ;;
    -k) ssh_options+=(-o "UserKnownHostsFile=$2"); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "error: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "usage: $0 [--install] [-l USER] [-p PORT] [-i KEY] [-k KNOWN_HOSTS] HOST..." >&2; exit 2; }

venv="$PWD/.venv"
python="$venv/bin/python"
[ -x "$python" ] || { echo "error: $python not found; run make venv first" >&2; exit 1; }
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

check() {  # HOST: 0 when the host is ready
  local host=$1 ok=0 out
  if ! out=$(ssh "${ssh_options[@]}" "$host" true 2>&1); then
    echo "$host: cannot log in over SSH: $out" >&2
    echo "  copy your public key: ssh-copy-id ${ssh_options[*]} $host (see deploy/README.md)" >&2
    return 1
  fi
  if out=$(ssh "${ssh_options[@]}" "$host" "$python" -c \
      "'import sys, sweeper, pyspark, distributed; print(\"%d.%d\" % sys.version_info[:2])'" 2>&1); then
    if [ "$out" != "$version" ]; then
      echo "$host: $python is Python $out, this machine runs $version (PySpark needs the same)" >&2; ok=1
    fi
  else
    echo "$host: $python missing or without sweeper/pyspark/distributed: ${out##*$'\n'}" >&2; ok=1
  fi
  if ! out=$(ssh "${ssh_options[@]}" "$host" 'java -version 2>&1'); then
    echo "$host: Java not found; on Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless" >&2; ok=1
  else
    major=$(echo "$out" | awk -F'"' '/version/ {print $2; exit}' | cut -d. -f1)
    if [ -z "$major" ] || [ "$major" -lt 17 ]; then
      echo "$host: Java ${major:-?} found; Spark 4 needs 17+ (apt-get install openjdk-17-jre-headless)" >&2; ok=1
    fi
  fi
  if ! ssh "${ssh_options[@]}" "$host" 'ls /usr/lib/*/libblas.so.3 /usr/lib64/libblas.so.3 /usr/lib/libblas.so.3' \
      >/dev/null 2>&1; then  # a warning only: spark and dask do not need it
    echo "$host: no libblas.so.3: spark-mllib would use Java BLAS (apt-get install libopenblas0-pthread)" >&2
  fi
  [ "$ok" = 0 ] && echo "$host: ready (Python $version at $python, Java $major)"
  return "$ok"
}

install_on() {  # HOST
  local host=$1 build
  build=$(mktemp -d)
  trap 'rm -rf "$build"' RETURN
  "$python" -m pip wheel --quiet --no-deps --wheel-dir "$build" .
  "$python" -m pip freeze --exclude-editable | grep -v '^sweeper' >"$build/constraints.txt"
  ssh "${ssh_options[@]}" "$host" "mkdir -p /tmp/sweeper-install"
  scp -q "${ssh_options[@]}" "$build"/* "$host:/tmp/sweeper-install/"
  ssh "${ssh_options[@]}" "$host" "set -e; mkdir -p '$(dirname "$venv")'; python$version -m venv '$venv';
    '$venv/bin/pip' install --quiet --upgrade pip;
    '$venv/bin/pip' install --quiet -c /tmp/sweeper-install/constraints.txt /tmp/sweeper-install/*.whl asyncssh;
    rm -rf /tmp/sweeper-install"
}

status=0
for host in "$@"; do
  check "$host" && continue
  if [ "$install" = 1 ]; then
    echo "$host: installing the environment at $venv" >&2
    { install_on "$host" && check "$host"; } || status=1
  else
    status=1
  fi
done
exit "$status"
