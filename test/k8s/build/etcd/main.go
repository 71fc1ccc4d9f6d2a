// Command etcd is the upstream etcd server: the same entry point as etcd's own main package,
// which lives in a module of its own that the proxy serves only with its server library.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
