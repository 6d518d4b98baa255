// Command etcd is a thin wrapper around etcd's own entry point, so that the etcd server can be
// built from the Go module proxy at the version kube-apiserver is tested with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
