#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer. Say how to get it when it is missing.
#   deploy/check-java.sh [--quiet]   --quiet: say nothing when Java is fine (make sweep's check)
set -u
quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1
java_bin=java
[ -n "${JAVA_HOME:-}" ] && java_bin="$JAVA_HOME/bin/java"
if ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "error: Java not found. Spark needs Java 17 or newer:" >&2
  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless" >&2
  echo "  or set JAVA_HOME to a JDK 17+ (for example from https://adoptium.net)" >&2
  exit 1
fi
version=$("$java_bin" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
[ "$major" = "1" ] && major=$(echo "$version" | cut -d. -f2)
if [ -z "$major" ] || [ "$major" -lt 17 ] 2>/dev/null; then
  echo "error: Java $version found at $(command -v "$java_bin"); Spark needs Java 17 or newer." >&2
  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless, then set JAVA_HOME" >&2
  exit 1
fi
[ "$quiet" = 1 ] || echo "Java $version: ok"
