#!/usr/bin/env bash
# Debian packages the integration tests need beyond Python and Java:
#   openssh-server  the tests start their own sshd on 127.0.0.1 (tests/support/sshd.py)
#   openssh-client  ssh and ssh-keygen
#   iproute2        `ip netns` for the cross-host tests (they skip where namespaces are not permitted)
#   chromium        the report test opens report.html in a headless browser
#   openjdk-17-jdk-headless, maven  build the MiniYARNCluster of the YARN tests (deploy/yarn)
#   libopenblas0-pthread  libblas.so.3 for Spark ML: without it MLlib falls back to Java BLAS while
#                   scikit-learn uses OpenBLAS, a bias against spark-mllib in every time comparison
#   dataset-fashion-mnist  the IDX files `make bench` trains on (without them it falls back to digits
#                   and its Spark/Dask verdicts are n/a)
# Idempotent: a no-op when everything is installed; `apt-get update` only when a package is
# missing and not installable from the current package lists. Root, or sudo otherwise.
set -euo pipefail

packages=(openssh-server openssh-client iproute2 chromium openjdk-17-jdk-headless maven libopenblas0-pthread dataset-fashion-mnist)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for package in "${packages[@]}"; do
  installed "$package" || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "test packages: ok (${packages[*]})"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: ${missing[*]} missing and apt-get not found; install OpenSSH's server and client by hand" >&2
  exit 1
fi

as_root=()
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "error: ${missing[*]} missing; run this script as root (sudo not found)" >&2
    exit 1
  fi
  as_root=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when one of the packages has no installation candidate.
for package in "${missing[@]}"; do
  candidate=$(apt-cache policy "$package" 2>/dev/null | awk '/Candidate:/ {print $2}')
  if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
    "${as_root[@]}" apt-get update -qq
    break
  fi
done
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The packaged sshd service is not needed (the tests run their own); it must not hold port 22
# on machines without systemd either, so nothing is started here.
echo "test packages: installed ${missing[*]}"
