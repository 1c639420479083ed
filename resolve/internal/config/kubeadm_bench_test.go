package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// BenchmarkParseKubeadm parses kubeadm configs of growing size, and the
// hostile shapes the limits stop, each up to the 4 MiB file limit.
func BenchmarkParseKubeadm(b *testing.B) {
	type input struct {
		name    string
		content string
	}
	var inputs []input
	for _, n := range []int{1000, 10000, 16000} { // 6 nodes a key: 16,667 keys pass yamlfile.MaxNodes
		inputs = append(inputs, input{fmt.Sprintf("keys/%d", n), yamlKeys(n)})
	}
	for _, n := range []int{10, 100, 1000} {
		inputs = append(inputs, input{fmt.Sprintf("documents/%d", n), yamlDocs(n)})
	}
	for _, n := range []int{1000, 10000, 100000} {
		inputs = append(inputs,
			input{fmt.Sprintf("comment-lines/%d", n), strings.Repeat("# ['{ comment\n", n) + "a: 1\n"},
			input{fmt.Sprintf("block-scalar-lines/%d", n), "a: |\n" + strings.Repeat("  [' line\n", n)})
	}
	fill := func(unit string) string { return strings.Repeat(unit, (nodefs.MaxFileSize-64)/len(unit)) }
	inputs = append(inputs,
		input{"hostile/flow-depth-4MiB", "a: " + fill("[")},
		input{"hostile/block-depth-4MiB", fill("- ")},
		input{"hostile/laughs", yamlLaughs(9, 9)},
		input{"hostile/aliases-4MiB", "a: &a [1]\nb: [" + fill("*a, ") + "]\n"},
		input{"hostile/documents-4MiB", fill("---\na: 1\n")},
		input{"hostile/keys-4MiB", yamlKeys(nodefs.MaxFileSize / 20)},
	)
	for _, in := range inputs {
		data := []byte(in.content)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_, _ = parseKubeadm("/x", data)
			}
		})
	}
}

// BenchmarkReadCRIDockerd reads cri-dockerd units of growing size.
func BenchmarkReadCRIDockerd(b *testing.B) {
	type input struct {
		name    string
		content string
	}
	var inputs []input
	for _, n := range []int{400, 4000} {
		inputs = append(inputs, input{fmt.Sprintf("words/%d", n),
			"[Service]\nExecStart=/usr/bin/cri-dockerd" + strings.Repeat(" --a=b", n-1) + "\n"})
	}
	for _, n := range []int{1000, 10000, 100000} {
		inputs = append(inputs,
			input{fmt.Sprintf("lines/%d", n), "[Service]\n" + strings.Repeat("Environment=A=1\n", n) + "ExecStart=/x\n"},
			input{fmt.Sprintf("continuations/%d", n), "[Service]\nExecStart=/x \\\n" + strings.Repeat("  \\\n", n) + " --a\n"})
	}
	inputs = append(inputs,
		input{"hostile/words-4MiB", "[Service]\nExecStart=/x " + strings.Repeat("a ", (nodefs.MaxFileSize-64)/2)},
		input{"hostile/execstarts-4MiB", "[Service]\n" + strings.Repeat("ExecStart=/x a\n", (nodefs.MaxFileSize-64)/15)},
		input{"hostile/quote-4MiB", "[Service]\nExecStart=/x \"" + strings.Repeat("a ", (nodefs.MaxFileSize-64)/2)},
	)
	for _, in := range inputs {
		fsys := nodetest.MapFS(map[string]string{unitLib: in.content})
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.content)))
			for b.Loop() {
				_, _ = ReadCRIDockerd(fsys)
			}
		})
	}
}

// BenchmarkReadKubelet reads kubelet flag files of growing size.
func BenchmarkReadKubelet(b *testing.B) {
	type input struct {
		name    string
		content string
	}
	var inputs []input
	for _, n := range []int{400, 4000} {
		inputs = append(inputs, input{fmt.Sprintf("flags/%d", n), kubeletKubeadmArgs + "=\"" + strings.Repeat("--a=b ", n) + "\"\n"})
	}
	for _, n := range []int{1000, 10000, 100000} {
		inputs = append(inputs, input{fmt.Sprintf("assignments/%d", n), strings.Repeat(kubeletKubeadmArgs+"='--a=b'\n", n)})
	}
	inputs = append(inputs,
		input{"hostile/flags-4MiB", kubeletKubeadmArgs + "=\"" + strings.Repeat("a ", (nodefs.MaxFileSize-64)/2) + "\"\n"},
		input{"hostile/variables-4MiB", yamlKeys(0) + strings.Repeat("V=1\nW=2\n", (nodefs.MaxFileSize-64)/8)},
	)
	for _, in := range inputs {
		fsys := nodetest.MapFS(map[string]string{kubeletFlagsEnv: in.content})
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.content)))
			for b.Loop() {
				_, _ = ReadKubelet(fsys)
			}
		})
	}
}
