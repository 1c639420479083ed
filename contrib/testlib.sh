# Shared by contrib/*/test.sh (sourced, not run): summaries of the upstream
# projects' `go test -v` logs. Apart from contrib/lib.sh, whose content keys
# the patched builds of scripts/deps.sh.

# go_test_summary LOG: per package of a `go test -v` LOG, its top-level
# tests and subtests passed, failed and skipped (a package's lines come
# before its ok/FAIL line).
go_test_summary() {
	awk '
		/^--- PASS/ { p++ } /^--- FAIL/ { f++ } /^--- SKIP/ { s++ }
		/^ +--- PASS/ { sp++ } /^ +--- FAIL/ { sf++ } /^ +--- SKIP/ { ss++ }
		/^(ok|FAIL)[ \t]+[a-z]/ {
			printf "%-4s %-50s %3d tests (%d failed, %d skipped), %3d subtests (%d failed, %d skipped), %s\n", $1, $2, p+f+s, f, s, sp+sf+ss, sf, ss, $3
			p = f = s = sp = sf = ss = 0
		}
		/^\?/ { printf "%-4s %-50s no test files\n", "", $2 }
	' "$1"
}

# go_test_failures LOG: LOG without the lines of passing tests: a failing
# assertion is printed where its subtest ran, not beside its --- FAIL line.
go_test_failures() {
	grep -v -E '^ *--- (PASS|SKIP)|^=== (RUN|PAUSE|CONT|NAME)' "$1" | tail -n 300
}
