// A process the chaos orchestrator spawns runs in its own process group (so signals reach it
// and its children), which also means it outlives an orchestrator killed with SIGKILL. This makes
// it exit once it is orphaned (its parent changed), so no chaos run ever leaves processes behind.
export function exitWithParent(everyMs = 500): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, everyMs).unref();
}
