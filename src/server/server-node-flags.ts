// The node flags a Herald server process runs with. `herald dev`, the test and bench clusters and
// the chaos suite start every server with them; an operator starting `herald server` directly
// passes the same (`node --max-semi-space-size=64 bin/herald.mjs server ...`, or NODE_OPTIONS).
//
// Why a larger young generation: apply, dispatch and replication allocate objects that live for
// one command — a few milliseconds, across the command's LevelDB reads and write. With V8's
// default 16 MB semi-spaces a herd scavenged every ~80 ms, so most of each command's objects were
// still alive, copied and promoted to the old generation, whose pages were then faulted in and
// freed again: GC threads and page faults took a third of a follower's CPU. At 64 MB, a herd of
// 60k runs cost 263 instead of 336 µs of server CPU per run (two interleaved pairs, drain 9.4–9.9 s
// instead of 13.0–15.2 s). The young generation is bounded by it: at most 2 × 64 MB per process.
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
