package unitfile_test

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/resolve/internal/unitfile"
)

func ExampleWords() {
	u, err := unitfile.Parse([]byte("[Service]\nExecStart=/usr/local/bin/sandboxpin shim \\\n  --listen unix:///run/sandboxpin/shim.sock\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	words, err := unitfile.Words(u.Get("Service", "ExecStart"))
	fmt.Printf("%q %v\n", words, err)
	// Output:
	// ["/usr/local/bin/sandboxpin" "shim" "--listen" "unix:///run/sandboxpin/shim.sock"] <nil>
}
