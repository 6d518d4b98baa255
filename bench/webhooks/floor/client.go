// The API server's side of an admission call, for bench/webhooks/floor.py: Go's
// net/http and crypto/tls over HTTP/1.1 only (kube-apiserver's webhook client for a
// Service), client-go's 25 idle connections per host. Usage:
//
//	client URL CONCURRENT ROUNDS BODY_FILE
//
// sends CONCURRENT POSTs of BODY_FILE at once, ROUNDS times in a row, on one transport, and
// prints each round's time and failures.
package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	url := os.Args[1]
	n, _ := strconv.Atoi(os.Args[2])
	rounds, _ := strconv.Atoi(os.Args[3])
	body, _ := os.ReadFile(os.Args[4])
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
	client := &http.Client{Transport: tr}
	for r := 0; r < rounds; r++ {
		start := time.Now()
		var wg sync.WaitGroup
		errs := 0
		var mu sync.Mutex
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
		fmt.Printf("round %d: %d requests in %v, %d errors\n", r, n, time.Since(start), errs)
	}
}
