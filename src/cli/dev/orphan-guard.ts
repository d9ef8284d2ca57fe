// Preloaded (node --import) into every node that `herald dev` starts. The dev process holds the
// write end of each node's stdin; when it goes away for any reason — even SIGKILL, where it has
// no chance to clean up — the pipe closes and the node shuts itself down gracefully instead of
// living on as an orphan that keeps the ports and the data directory locked.
process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.on('error', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.resume();
