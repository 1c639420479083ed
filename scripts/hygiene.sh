#!/usr/bin/env bash
# Fails when a tracked file would bloat a module zip: a file over 1 MiB, or an
# executable binary (ELF, Mach-O, PE, or a #! script is fine) outside a
# testdata directory. Every tracked file under a module's directory ships in
# that module's zip, which a proxy keeps for good once it has served it (a
# 24 MB build of the CLI once reached the root module's: issue 45).
#
#   bash scripts/hygiene.sh
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	size=$(stat -c %s -- "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "hygiene: $f is $size bytes, over 1 MiB: it would ship in a module zip"
		bad=1
	fi
	case "/$f" in */testdata/*) continue ;; esac
	# The magic numbers of ELF, Mach-O (32/64-bit, both byte orders, fat)
	# and PE (MZ) executables.
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 4d5a*)
		echo "hygiene: $f is an executable binary: build outputs are never committed (.gitignore)"
		bad=1
		;;
	esac
done < <(git ls-files -z)
[ "$bad" = 0 ] || exit 1
echo "hygiene: no tracked file over 1 MiB, no executable binary outside testdata"
