//go:build cuda

package main

// What TestTUIDevices expects of this build, run where a GPU is: auto and
// cuda open it.
const (
	autoPrefix = "cuda"
	cudaPrefix = "cuda"
	cudaErr    = ""
)
