// Command leaderelect is a reference leader-election candidate built on client-go's
// tools/leaderelection with a LeaseLock. kcontrol's interoperability tests run it next to
// kcontrol.leaderelection electors contending for the same Lease.
//
// It prints one line per transition on stdout, flushed at once:
//
//	NEW_LEADER <id>   a holder was observed that differs from the last one reported
//	LEADING <id>      this candidate acquired the lease
//	STOPPED <id>      this candidate stopped leading (or left the election without leading)
//
// SIGTERM or SIGINT cancels the election context; with ReleaseOnCancel the lease is then given
// up (empty holder, leaseDurationSeconds=1) before the process exits with status 0. Losing the
// lease without being asked exits with status 1, as kube-controller-manager does.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

var stdoutMu sync.Mutex

func say(format string, args ...any) {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
	_ = os.Stdout.Sync()
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig file")
	namespace := flag.String("namespace", "default", "namespace of the Lease")
	name := flag.String("name", "", "name of the Lease")
	id := flag.String("id", "", "identity of this candidate")
	leaseDuration := flag.Duration("lease-duration", 15*time.Second, "lease duration")
	renewDeadline := flag.Duration("renew-deadline", 10*time.Second, "renew deadline")
	retryPeriod := flag.Duration("retry-period", 2*time.Second, "retry period")
	flag.Parse()
	if *name == "" || *id == "" {
		fmt.Fprintln(os.Stderr, "--name and --id are required")
		os.Exit(2)
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeconfig: %v\n", err)
		os.Exit(2)
	}
	client := kubernetes.NewForConfigOrDie(config)

	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: *namespace, Name: *name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *id},
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: true,
		Name:            *name,
		Callbacks: leaderelection.LeaderCallbacks{
			// The guarded work: hold on until the context ends (cancelled or leadership lost).
			OnStartedLeading: func(ctx context.Context) {
				say("LEADING %s", *id)
				<-ctx.Done()
			},
			OnStoppedLeading: func() { say("STOPPED %s", *id) },
			OnNewLeader:      func(identity string) { say("NEW_LEADER %s", identity) },
		},
	})
	if ctx.Err() == nil {
		// RunOrDie returned without being asked to: the lease was lost.
		os.Exit(1)
	}
}
