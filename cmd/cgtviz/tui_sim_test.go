//go:build !cuda

package main

// What TestTUIDevices expects of this build: auto is sim, cuda fails.
const (
	autoPrefix = "sim"
	cudaPrefix = ""
	cudaErr    = "without GPU support"
)
