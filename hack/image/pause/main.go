// Command pause is the sandbox process of a pod on the test node (tests/image/test_real_node.py):
// it holds the pod's namespaces and waits for a signal, as registry.k8s.io/pause does, which
// cannot be pulled here. Built and packaged by hack/image/pause.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
