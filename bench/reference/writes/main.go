// Command writes measures what client-go spends per write, the peer of bench/writes' kcontrol
// child: the four writes a rollout is made of, each sent -ops times by -concurrency workers
// (a controller's workers), one phase after the other:
//
//   - status: PUT a ReplicaSet's status subresource (the object as last answered, a count
//     toggled), as the ReplicaSet controller writes its status;
//   - scale: PUT a ReplicaSet with spec.replicas toggled, as the Deployment controller scales
//     one (kcontrol sends a merge patch instead; each side sends what its controller sends);
//   - event: POST a core/v1 Event, as an event recorder does;
//   - pod: POST a pod, then DELETE it (two requests per op), as the ReplicaSet controller.
//
// Each worker writes its own ReplicaSet (created before the first phase, not measured), so
// no write conflicts. For every phase it prints one line of JSON:
//
//	{"phase":"status","requests":N,"cpu_seconds":C,"wall_seconds":W}
//
// cpu is the process's user+system time (every thread: Go's garbage collector included)
// over the phase. The wire format is client-go's default (JSON) unless -protobuf, which is
// kube-controller-manager's (its --kube-api-content-type default). No client-side rate
// limit (QPS -1), as the Python side.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "writes: "+format+"\n", args...)
	os.Exit(1)
}

func replicaSet(name string) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name, "pod-template-hash": "5d8f7c9b4"}
	replicas := int32(0)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
			}},
		},
	}
}

func event(namespace string, rs *appsv1.ReplicaSet, i int) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", rs.Name, time.Now().UnixNano()+int64(i)),
			Namespace: namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "ReplicaSet", Namespace: namespace, Name: rs.Name, UID: rs.UID,
			APIVersion: "apps/v1", ResourceVersion: rs.ResourceVersion,
		},
		Reason:         "SuccessfulCreate",
		Message:        fmt.Sprintf("Created pod: %s-%d", rs.Name, i),
		Source:         corev1.EventSource{Component: "replicaset-controller"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
}

func pod(rs *appsv1.ReplicaSet, i int) *corev1.Pod {
	template := rs.Spec.Template
	controller := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%d", rs.Name, i),
			Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: &controller, BlockOwnerDeletion: &controller,
			}},
		},
		Spec: *template.Spec.DeepCopy(),
	}
}

type result struct {
	Phase    string  `json:"phase"`
	Requests int     `json:"requests"`
	CPU      float64 `json:"cpu_seconds"`
	Wall     float64 `json:"wall_seconds"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "default", "namespace to write in")
	ops := flag.Int("ops", 1000, "writes per phase (pods: create+delete pairs)")
	concurrency := flag.Int("concurrency", 5, "workers")
	protobuf := flag.Bool("protobuf", false, "protobuf, as kube-controller-manager")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		die("%v", err)
	}
	config.QPS = -1
	config.UserAgent = "kcontrol-bench-writes-go"
	if *protobuf {
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		die("%v", err)
	}
	ctx := context.Background()
	sets := clientset.AppsV1().ReplicaSets(*namespace)
	events := clientset.CoreV1().Events(*namespace)
	pods := clientset.CoreV1().Pods(*namespace)

	owned := make([]*appsv1.ReplicaSet, *concurrency)
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000)
	for w := range owned {
		rs, err := sets.Create(ctx, replicaSet(fmt.Sprintf("go-%s-%d", suffix, w)), metav1.CreateOptions{})
		if err != nil {
			die("create ReplicaSet: %v", err)
		}
		owned[w] = rs
	}

	phases := []struct {
		name     string
		requests int // per op
		op       func(w, i int) error
	}{
		{"status", 1, func(w, i int) error {
			rs := owned[w].DeepCopy()
			rs.Status.Replicas = int32(i % 2)
			answer, err := sets.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
			if err == nil {
				owned[w] = answer
			}
			return err
		}},
		{"scale", 1, func(w, i int) error {
			rs := owned[w].DeepCopy()
			replicas := int32(i % 2)
			rs.Spec.Replicas = &replicas
			answer, err := sets.Update(ctx, rs, metav1.UpdateOptions{})
			if err == nil {
				owned[w] = answer
			}
			return err
		}},
		{"event", 1, func(w, i int) error {
			_, err := events.Create(ctx, event(*namespace, owned[w], i), metav1.CreateOptions{})
			return err
		}},
		{"pod", 2, func(w, i int) error {
			created, err := pods.Create(ctx, pod(owned[w], i), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			return pods.Delete(ctx, created.Name, metav1.DeleteOptions{})
		}},
	}
	out := json.NewEncoder(os.Stdout)
	for _, phase := range phases {
		per := *ops / *concurrency
		cpu0, wall0 := cpuSeconds(), time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, *concurrency)
		for w := 0; w < *concurrency; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if err := phase.op(w, i); err != nil {
						errs <- fmt.Errorf("%s: %w", phase.name, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			die("%v", err)
		}
		res := result{
			Phase:    phase.name,
			Requests: per * *concurrency * phase.requests,
			CPU:      cpuSeconds() - cpu0,
			Wall:     time.Since(wall0).Seconds(),
		}
		if err := out.Encode(res); err != nil {
			die("%v", err)
		}
	}
	for _, rs := range owned {
		_ = sets.Delete(ctx, rs.Name, metav1.DeleteOptions{})
	}
}
