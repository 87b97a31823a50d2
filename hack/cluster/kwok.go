package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	"sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/cmd"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// runKwok runs kwok's controller, which makes Nodes look Ready and moves Pods on them to Running
// without a kubelet. It mirrors sigs.k8s.io/kwok/cmd/kwok.
func runKwok() int {
	// cobra merges pflag.CommandLine into every root command. The Kubernetes packages linked
	// into this binary register a global "--version" flag of their own type there, which
	// breaks the bool "--version" flag cobra expects on kwok's command. kwok is the only
	// component in this process, so it starts from an empty global flag set.
	pflag.CommandLine = pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	if err := addDefaultStages(); err != nil {
		fmt.Fprintf(os.Stderr, "kwok: %v\n", err)
		return 1
	}
	flagset := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}

	ctx := signals.SetupSignalContext()
	ctx, logger := log.InitFlags(ctx, flagset)
	ctx, err := config.InitFlags(ctx, flagset)
	if err != nil {
		logger.Error("Init config flags", "err", err)
		return 1
	}
	command := cmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(flagset)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		return 1
	}
	return 0
}

// addDefaultStages gives kwok the stages kwokctl would: nodes become Ready and keep a heartbeat,
// pods become Ready, complete and are deleted. kwok itself starts with none ("no stages found").
// They are written to a file passed with --config, unless the caller passes its own --config.
func addDefaultStages() error {
	for _, arg := range os.Args[1:] {
		if arg == "-c" || arg == "--config" || strings.HasPrefix(arg, "--config=") {
			return nil
		}
	}
	stages := []string{
		nodefast.DefaultNodeInit,
		heartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	file, err := os.CreateTemp("", "kwok-stages-*.yaml")
	if err != nil {
		return fmt.Errorf("writing the default stages: %w", err)
	}
	defer file.Close()
	if _, err := file.WriteString(strings.Join(stages, "\n---\n")); err != nil {
		return fmt.Errorf("writing the default stages: %w", err)
	}
	os.Args = append(os.Args, "--config="+file.Name())
	return nil
}
