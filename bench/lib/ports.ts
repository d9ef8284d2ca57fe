// Test helpers draw ports from a block per vitest worker (VITEST_POOL_ID, 0 outside vitest; see
// chaos/orchestrator/free-port.ts). A bench run by hand would share block 0 with the chaos suite
// and other benches on this shared machine, so it takes the last block unless a test runs it.
export function useBenchPortBlock(): void {
  process.env.VITEST_POOL_ID ??= '7';
}
