// Command kube is the multi-call control-plane binary for pivoter's tests and demo.
//
// It is started by hack/cluster/localcluster.py (used by hack/cluster-up.sh and the pytest
// fixtures) as one process per component: "kube etcd", "kube kube-apiserver", and so on. It is
// also dispatched on its own name, so a symlink called kubectl behaves like kubectl.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// components maps a component name to its entry point; each returns the process exit code.
var components = map[string]func() int{
	"etcd":                    runEtcd,
	"kube-apiserver":          runAPIServer,
	"kube-controller-manager": runControllerManager,
	"kube-scheduler":          runScheduler,
	"kubectl":                 runKubectl,
	"kwok":                    runKwok,
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok {
		if len(os.Args) < 2 {
			usage()
			os.Exit(2)
		}
		name = os.Args[1]
		// The upstream commands read os.Args themselves (cobra, kwok's global flags), so the
		// component name becomes argv[0] as if it had been invoked directly.
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	run, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n", name)
		usage()
		os.Exit(2)
	}
	os.Exit(run())
}

func usage() {
	names := make([]string, 0, len(components))
	for name := range components {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kube COMPONENT [flags]\ncomponents: %s\n", strings.Join(names, ", "))
}
