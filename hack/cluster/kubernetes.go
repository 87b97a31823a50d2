package main

import (
	_ "time/tzdata" // CronJob time zones, as upstream's mains import it

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"os"
)

func runAPIServer() int { return cli.Run(apiserver.NewAPIServerCommand()) }

func runControllerManager() int {
	return cli.Run(controllermanager.NewControllerManagerCommand())
}

func runScheduler() int { return cli.Run(scheduler.NewSchedulerCommand()) }

func runKubectl() int {
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err) // prints the error the kubectl way and exits non-zero
	}
	return 0
}
