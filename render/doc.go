// Package render turns read-only engine views into pictures: the CUDAGraph
// tree of a State as Graphviz DOT (TreeDOT) or indented text (TreeText), one
// node's CUDA graph as DOT (NodeGraphDOT), and DOT into SVG (SVG).
// TreeOptions.SetStep highlights what the step that led to the State did.
//
// SVG does not link Graphviz: it runs cgtviz-graphviz
// (cmd/cgtviz/cgtviz-graphviz, found by FindGraphviz), the one program that
// links github.com/goccy/go-graphviz, as a child process per picture. Those
// bindings compile Graphviz's WebAssembly module in a package init, which
// every process linking them pays at start; kept out of this package, the
// cost falls on renders alone, and a process per render also isolates the
// module, which is not safe for concurrent use and cannot recover once it
// fails. Render never mutates the engine: it reads States.
package render
