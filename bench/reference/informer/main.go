// Command informer measures a client-go pod informer, the peer of bench/informer/'s kcontrol
// informer: a SharedInformerFactory pod informer with one counting event handler, run until
// the informer has synced, then (optionally) while a writer patches pods.
//
// Sync mode (default): prints one line of JSON when the informer has synced and exits:
//
//	{"mode":"sync","objects":N,"wall_seconds":W,"cpu_seconds":C,"maxrss_kb":M,
//	 "rss_kb":R,"heap_inuse_after_gc":H,"rss_settled_kb":S,...}
//
// wall and cpu are measured from the start of main to HasSynced (HasSynced is polled every
// millisecond rather than through WaitForCacheSync's 100 ms period, which would quantise the
// time). maxrss_kb is VmHWM (peak RSS); rss_kb is VmRSS at sync; heap_inuse_after_gc is runtime.MemStats.HeapInuse after a
// runtime.GC(); rss_settled_kb is VmRSS after runtime.GC() and debug.FreeOSMemory().
//
// Churn mode (-churn): after sync prints {"mode":"synced",...}, then reads stdin: the line
// "start" resets the event counters, the line "stop" prints the update events delivered to the
// handler since "start", the CPU seconds used, and the delay from the writer's timestamp
// (annotation bench/ts, Unix seconds) to the handler call; then the program exits.
//
// The wire format is client-go's default (JSON, gzip) unless -protobuf or -disable-compression
// (kube-controller-manager sets both, with -trim-managed-fields's transform). Whether the reflector uses
// a streaming list (WatchListClient, on by default in client-go >= 0.35) or LIST is client-go's
// feature gate: set KUBE_FEATURE_WatchListClient=false in the environment to force LIST.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// maxRSSKB is the peak RSS of this program, VmHWM: not Getrusage's Maxrss, which on Linux also
// counts the parent's RSS at fork (it survives exec).
func maxRSSKB() int64 { return vmKB("VmHWM:") }

// vmRSSKB is the current resident set size.
func vmRSSKB() int64 { return vmKB("VmRSS:") }

// vmKB reads one "Vm...:  N kB" field of /proc/self/status.
func vmKB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field) {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				v, _ := strconv.ParseInt(fields[1], 10, 64)
				return v
			}
		}
	}
	return -1
}

func emit(v map[string]any) {
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
}

type counters struct {
	mu      sync.Mutex
	adds    atomic.Int64
	updates int64
	lags    []float64
}

func (c *counters) update(obj any) {
	now := float64(time.Now().UnixNano()) / 1e9
	lag := -1.0
	if pod, ok := obj.(*corev1.Pod); ok {
		if ts, ok := pod.Annotations["bench/ts"]; ok {
			if t, err := strconv.ParseFloat(ts, 64); err == nil {
				lag = now - t
			}
		}
	}
	c.mu.Lock()
	c.updates++
	if lag >= 0 {
		c.lags = append(c.lags, lag)
	}
	c.mu.Unlock()
}

func (c *counters) reset() {
	c.mu.Lock()
	c.updates = 0
	c.lags = c.lags[:0]
	c.mu.Unlock()
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func main() {
	start := time.Now()
	cpu0 := cpuSeconds()

	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "", "namespace to watch (empty: all namespaces)")
	trim := flag.Bool("trim-managed-fields", false, "drop metadata.managedFields in a transform (as kube-controller-manager does)")
	protobuf := flag.Bool("protobuf", false, "use protobuf instead of client-go's default JSON")
	noGzip := flag.Bool("disable-compression", false, "do not ask for gzip (rest.Config.DisableCompression, as kube-controller-manager sets it)")
	churn := flag.Bool("churn", false, "after sync, count update events between stdin lines start and stop")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	config.QPS = -1 // no client-side rate limit, as the Python side (qps=0)
	config.DisableCompression = *noGzip
	if *protobuf {
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}

	options := []informers.SharedInformerOption{informers.WithNamespace(*namespace)}
	if *trim {
		options = append(options, informers.WithTransform(func(obj any) (any, error) {
			if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
				accessor.SetManagedFields(nil)
			}
			return obj, nil
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, options...)
	informer := factory.Core().V1().Pods().Informer()
	var c counters
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.adds.Add(1) },
		UpdateFunc: func(_, newObj any) { c.update(newObj) },
	}); err != nil {
		fmt.Fprintln(os.Stderr, "handler:", err)
		os.Exit(2)
	}

	stop := make(chan struct{})
	factory.Start(stop)
	for !informer.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	wall := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	rss := vmRSSKB()
	maxrss := maxRSSKB()
	objects := len(informer.GetStore().ListKeys())

	if *churn {
		emit(map[string]any{
			"mode": "synced", "objects": objects, "wall_seconds": wall, "cpu_seconds": cpu,
			"watch_list_client": clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
		})
		scanner := bufio.NewScanner(os.Stdin)
		var t0 time.Time
		var c0 float64
		for scanner.Scan() {
			switch strings.TrimSpace(scanner.Text()) {
			case "start":
				c.reset()
				t0, c0 = time.Now(), cpuSeconds()
			case "stop":
				elapsed := time.Since(t0).Seconds()
				used := cpuSeconds() - c0
				c.mu.Lock()
				lags := append([]float64(nil), c.lags...)
				updates := c.updates
				c.mu.Unlock()
				sort.Float64s(lags)
				emit(map[string]any{
					"mode": "churn", "updates": updates, "seconds": elapsed, "cpu_seconds": used,
					"events_per_second": float64(updates) / elapsed,
					"lag_p50":           percentile(lags, 0.50),
					"lag_p99":           percentile(lags, 0.99),
					"lag_max":           percentile(lags, 1.0),
					"maxrss_kb":         maxRSSKB(),
				})
				close(stop)
				return
			}
		}
		close(stop)
		return
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.FreeOSMemory()
	emit(map[string]any{
		"mode":                "sync",
		"objects":             objects,
		"handler_adds":        c.adds.Load(),
		"wall_seconds":        wall,
		"cpu_seconds":         cpu,
		"maxrss_kb":           maxrss,
		"rss_kb":              rss,
		"heap_inuse_after_gc": ms.HeapInuse,
		"rss_settled_kb":      vmRSSKB(),
		"gomaxprocs":          runtime.GOMAXPROCS(0),
		"watch_list_client":   clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
		"protobuf":            *protobuf,
		"disable_compression": *noGzip,
	})
	close(stop)
}
