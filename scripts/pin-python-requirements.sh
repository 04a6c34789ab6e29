#!/usr/bin/env bash
# Rewrites a build-time Python requirements file with every wheel's sha256, for
# `pip install --require-hashes` (scripts/bootstrap.sh, scripts/container/fetch-models.sh):
#
#   bash scripts/pin-python-requirements.sh OUT 'header line' pkg==version ...
#
# Each pin gets the hashes of its wheels for CPython 3.11, 3.12 and 3.13 on x86_64 and aarch64 Linux
# (Debian bookworm's python3 is 3.11, trixie's 3.13; the Dockerfile's build stage is bookworm), so a
# machine with any of them installs the same bytes, and anything else fails instead of resolving anew.
# Every requirement must be listed, dependencies included (pip refuses an unpinned one under
# --require-hashes). Needs pip and PyPI; run it when a version changes, commit the result.
set -euo pipefail
out=${1:?usage: pin-python-requirements.sh OUT 'header' pkg==version ...}
header=${2:?header}
shift 2
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pv in 3.11 3.12 3.13; do
  for arch in x86_64 aarch64; do
    "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --implementation cp \
      --python-version "$pv" --platform "manylinux_2_28_$arch" --platform "manylinux_2_17_$arch" --platform "manylinux2014_$arch" \
      -d "$work/$pv-$arch" "$@"
  done
done
{
  printf '%s\n' "$header" | sed 's/^/# /'
  echo "# Pinned with wheel hashes by scripts/pin-python-requirements.sh (CPython 3.11-3.13, x86_64 and aarch64 Linux):"
  echo "#   bash scripts/pin-python-requirements.sh $out '...' $*"
  for pin in "$@"; do
    name=${pin%%==*}
    # Wheel file names normalise - to _ and may change case.
    pattern=$(echo "$name" | tr 'A-Z-' 'a-z_')
    hashes=$(find "$work" -type f -iname "${pattern}-${pin#*==}-*.whl" -exec sha256sum {} + | cut -d' ' -f1 | sort -u)
    [ -n "$hashes" ] || { echo "pin-python-requirements.sh: no wheel found for $pin" >&2; exit 1; }
    printf '%s' "$pin"
    for h in $hashes; do printf ' \\\n    --hash=sha256:%s' "$h"; done
    printf '\n'
  done
} > "$out"
echo "wrote $out"
