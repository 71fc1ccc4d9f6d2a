// Command coredns is upstream CoreDNS (coredns.go's main: coremain.Run) with only the plugins the
// local cluster's Corefile uses linked in, the way upstream documents a custom build (plugin.cfg
// trimmed): the full set drags in every cloud SDK (route53, azure, clouddns), 1362 packages to
// compile instead of 759, for code the tests never run. The plugins are upstream's, unchanged.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
)

func main() {
	coremain.Run()
}
