// Command workqueue measures client-go's work queue throughput: one producer adds N distinct
// items while W worker goroutines run Get -> Done on them, the add->get->done cycle that
// bench/workqueue.py measures for kcontrol.workqueue. The queue is unnamed, so no metrics.
//
// Output, on one line of JSON: {"items":N,"workers":W,"seconds":S,"items_per_second":R}
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
)

type result struct {
	Items          int     `json:"items"`
	Workers        int     `json:"workers"`
	Seconds        float64 `json:"seconds"`
	ItemsPerSecond float64 `json:"items_per_second"`
}

func main() {
	items := flag.Int("items", 200000, "distinct items to add and process")
	workers := flag.Int("workers", 4, "concurrent worker goroutines")
	flag.Parse()
	if *items < 1 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "items and workers must be positive")
		os.Exit(2)
	}

	queue := workqueue.NewTyped[int]()
	var processed atomic.Int64
	allDone := make(chan struct{})
	var wg sync.WaitGroup

	start := time.Now()
	for range *workers {
		wg.Go(func() {
			for {
				item, shutdown := queue.Get()
				if shutdown {
					return
				}
				queue.Done(item)
				if processed.Add(1) == int64(*items) {
					close(allDone)
				}
			}
		})
	}
	for i := range *items {
		queue.Add(i)
	}
	<-allDone
	elapsed := time.Since(start)
	queue.ShutDown()
	wg.Wait()

	out := result{
		Items:          *items,
		Workers:        *workers,
		Seconds:        elapsed.Seconds(),
		ItemsPerSecond: float64(*items) / elapsed.Seconds(),
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
