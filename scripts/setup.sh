#!/usr/bin/env bash
# Idempotent set-up shared by scripts/demo and scripts/test: Java 17, a
# virtualenv in .venv with the pinned packages, and this project's Python
# package. Re-runs are fast: nothing is reinstalled unless the pins changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  echo "setup: installing Java 17 (PySpark 4 needs it)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV" || {
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && "$PYTHON" -m venv "$VENV"
  }
fi

STAMP="$VENV/.spark-bucketing-installed"
WANT="$(cat "$ROOT/requirements.lock" "$ROOT/python_plugin/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "setup: installing pinned packages into $VENV (the first time downloads PySpark, ~450 MB)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$ROOT/requirements.lock"
  "$VENV/bin/python" -m pip install -q --no-deps -e "$ROOT/python_plugin"
  echo "$WANT" > "$STAMP"
fi
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
# The Spark session extension's jar (python_plugin/src/spark_bucketing/scala),
# compiled once per PySpark version and source change into ~/.cache/spark-bucketing.
"$VENV/bin/spark-bucketing" extension --quiet >/dev/null
