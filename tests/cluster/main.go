// Command cluster is one multi-call binary holding the components of a single-node test
// control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl.
// The first argument names the component; the rest are that component's own flags.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cluster etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubectl [flags]")
		os.Exit(2)
	}
	name, rest := os.Args[1], os.Args[2:]
	switch name {
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, rest...))
		return
	case "kube-apiserver":
		run(apiserver.NewAPIServerCommand(), name, rest)
	case "kube-controller-manager":
		run(controllermanager.NewControllerManagerCommand(), name, rest)
	case "kube-scheduler":
		run(scheduler.NewSchedulerCommand(), name, rest)
	case "kubectl":
		run(kubectl.NewDefaultKubectlCommand(), name, rest)
	default:
		fmt.Fprintf(os.Stderr, "cluster: unknown component %q\n", name)
		os.Exit(2)
	}
}

// run executes one cobra command with the component's own arguments and exits with its code.
func run(cmd *cobra.Command, name string, args []string) {
	os.Args = append([]string{name}, args...)
	cmd.SetArgs(args)
	os.Exit(cli.Run(cmd))
}
