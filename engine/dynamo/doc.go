// Package dynamo models the part of torch._dynamo that decides which
// compiled graph a call of a compiled function runs through: per code
// object a Cache of compiled graphs with their guards (shapes, dynamic dims,
// aliasing of arguments, static inputs), automatic dynamic shapes and the
// recompile limit. The engine keys its FunctionIDs by the graph a call
// gets; the tree itself (engine) knows nothing of guards.
package dynamo
