#!/usr/bin/env bash
# Set up (or update) the workstation in .venv. Idempotent and quiet.
#   bash packaging/setup.sh           the app, the model backends, the test tools, and the system
#                                     libraries the window needs
#   bash packaging/setup.sh --tests   the same, and what the tests' real-window and browser checks
#                                     use: Xvfb (a virtual display) and Chromium; and the Slurm,
#                                     MUNGE and MariaDB packages of the one-node cluster test
#                                     (tests/core/test_slurm_cluster.py, which runs as root)
# System packages (Debian / Ubuntu) are installed with apt-get when this runs as root; otherwise
# the one command that installs them is printed, and the rest of the set-up goes on.
# Torch: this installs the CPU build torch==2.13.0 unless a torch is already in .venv.
# On a CUDA lab machine install your CUDA build into .venv first, e.g.
#   .venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cu124
# and this script keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
for_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) for_tests=1 ;;
    *) echo "usage: bash packaging/setup.sh [--tests]" >&2; exit 2 ;;
  esac
done
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install -q --disable-pip-version-check --upgrade "pip>=24" >/dev/null
if ! "$VPY" -c "import torch" >/dev/null 2>&1; then
  "$VPY" -m pip install -q --disable-pip-version-check "${TORCH_SPEC:-torch==2.13.0}"
fi
"$VPY" -m pip install -q --disable-pip-version-check -e ".[ml,dev]"
# the project's own bytecode, written once here: where PYTHONDONTWRITEBYTECODE is set, Python
# would otherwise compile every module of the window again at each start
"$VPY" -m compileall -q workstation ui main.py >/dev/null

# The window: the system libraries of Qt's xcb platform plugin, as the dynamic loader reports them
# for the installed PySide6 (installed here as root, else the command is printed).
"$VPY" -m workstation.util.window_libs --install || true

# The tests' real-window check (Xvfb), the report's browser check (Chromium) and the one-node
# Slurm cluster (tests/slurm_cluster.py: its daemons and commands, each from its Debian package).
if [ "$for_tests" = 1 ]; then
  need=()
  command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
  command -v xvfb-run >/dev/null 2>&1 || need+=(xvfb)
  command -v xauth >/dev/null 2>&1 || need+=(xauth)
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  for pair in slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd sbatch:slurm-client sacct:slurm-client \
              munged:munge mariadbd:mariadb-server mariadb-install-db:mariadb-server; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
  done
  if [ "${#need[@]}" -gt 0 ]; then
    mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing for the tests: ${need[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
        || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; } \
        || echo "could not install ${need[*]}: the tests that need them skip, saying so"
    else
      echo "the tests' window, browser and Slurm cluster checks need: sudo apt-get install -y --no-install-recommends ${need[*]}"
      echo "(without them those tests skip, saying so; the Slurm cluster test also needs root)"
    fi
  fi
fi
echo "environment ready: .venv ($("$VPY" --version))"
