// Command gcmetadata measures what client-go's metadata cache costs per object: the peer of
// bench/gc_memory.py. It reads PartialObjectMetadata objects, one JSON document per line on
// stdin, decodes each into a metav1.PartialObjectMetadata (as the metadata client does) and
// adds it to a cache.Indexer with the namespace index (a metadata informer's store), then
// prints one line of JSON:
//
//	{"objects":N,"heap_bytes_per_object":B}
//
// B is the growth of runtime.MemStats.HeapAlloc over the stored objects, after runtime.GC(),
// divided by N; the input lines are read before the first measurement and dropped after it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

func main() {
	var lines [][]byte
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		lines = append(lines, append([]byte(nil), scanner.Bytes()...))
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	before := heap()
	for i, line := range lines {
		obj := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(line, obj); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := store.Add(obj); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		lines[i] = nil
	}
	after := heap()
	n := len(store.List())
	fmt.Printf("{\"objects\":%d,\"heap_bytes_per_object\":%.0f}\n", n, float64(after-before)/float64(n))
	runtime.KeepAlive(store)
}
