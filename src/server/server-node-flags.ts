// The node flags a Herald server process runs with. `herald dev`, the test and bench clusters and
// the chaos suite start every server with them; an operator starting `herald server` directly
// passes the same (`node --max-semi-space-size=32 bin/herald.mjs server ...`, or NODE_OPTIONS).
//
// Why a larger young generation: apply, dispatch and replication allocate objects that live for
// one command — a few milliseconds, across the command's LevelDB reads and write. With V8's
// default 16 MB semi-spaces a herd scavenged every ~80 ms, so most of each command's objects were
// still alive, copied and promoted to the old generation, whose pages were then faulted in and
// freed again: GC threads and page faults took a third of a follower's CPU. Server CPU per run of
// a 60k herd, two interleaved pairs each: 336 µs at 16 MB, 286 at 32, 263 at 64. 32 it is: the
// young generation is at most 2 × the semi-space per process, and at 64 the leader holding a
// million jobs went over its 512 MB memory target (581 MiB, against 484 at the default).
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
