// The node flags a Herald server process runs with. `herald dev`, the test and bench clusters and
// the chaos suite start every server with them; an operator starting `herald server` directly
// passes the same (`node --max-semi-space-size=32 --v8-pool-size=0 bin/herald.mjs server ...`, or
// NODE_OPTIONS).
//
// Why a larger young generation: apply, dispatch and replication allocate objects that live for
// one command — a few milliseconds, across the command's LevelDB reads and write. With V8's
// default 16 MB semi-spaces a herd scavenged every ~80 ms, so most of each command's objects were
// still alive, copied and promoted to the old generation, whose pages were then faulted in and
// freed again: GC threads and page faults took a third of a follower's CPU. 32 MB rather than
// more: the young generation is up to twice the semi-space per process, and larger ones put a
// leader holding a million jobs over its memory target (figures: bench/README.md).
//
// Why --v8-pool-size=0: V8 then sizes its helper pool (parallel scavenge, concurrent marking,
// background compiles) to the machine, one thread per core but one, where node's default is four
// threads whatever the cores. On a 2-core machine four helpers and the main thread fight for two
// cores: the main thread waits in each scavenge's join for helpers that are not running, and the
// helpers' work costs more than it saves (bench/README.md). Machines with more cores keep more
// helpers.
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32', '--v8-pool-size=0'];
