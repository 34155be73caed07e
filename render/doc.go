// Package render turns read-only engine views into pictures: the CUDAGraph
// tree of a State as Graphviz DOT (TreeDOT) or indented text (TreeText), one
// node's CUDA graph as DOT (NodeGraphDOT), and DOT into SVG (SVG).
//
// It is the only package that links github.com/goccy/go-graphviz. That
// library runs Graphviz as a process-global WebAssembly module that is not
// safe for concurrent use and cannot recover once it fails, so every call
// into it goes through one package-level lock and the first wasm-level
// failure is remembered. Render never mutates the engine: it reads States.
package render
