// Package distref holds the tests that compare sandboxpin's reference and pin
// packages with github.com/distribution/reference: the differential fuzz of
// reference.Parse and the parse-every-name baseline of the pin benchmarks.
//
// They live here, in the test harness module, and not beside the packages
// they test: a test's requirement is a requirement of its module, and every
// importer of pin would otherwise find distribution/reference in its module
// graph (issue 45: what a runtime imports requires go-digest alone).
package distref
