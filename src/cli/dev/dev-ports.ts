// Port layout of the local dev cluster, derived from one base port so that `herald dev` and the
// client commands agree on addresses without any configuration: with the default base 7100,
// node i (1-based) listens for clients on 7100+i, for peers on 7110+i, serves metrics on 7120+i and HTTP (API as JSON,
// dashboard) on 7130+i.

export const DEV_NODE_COUNT = 3;
/** Node counts `herald dev --nodes` starts (odd: a majority survives one or two losses). */
export const DEV_NODE_COUNTS = [3, 5] as const;
/** Where `herald dev` keeps its data unless told otherwise (relative to the working directory). */
export const DEFAULT_DEV_DATA_DIR = './.herald';
export const DEFAULT_DEV_BASE_PORT = 7100;
/** Nodes the port layout has room for (base+1 … base+9 for clients, and so on). */
export const MAX_DEV_NODES = 9;
/** The highest base port that keeps every derived port valid. */
export const MAX_DEV_BASE_PORT = 65535 - 40;

export interface DevNodePorts {
  id: string;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  httpPort: number;
}

export function devNodePorts(basePort: number, count = DEV_NODE_COUNT): DevNodePorts[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `n${i + 1}`,
    clientPort: basePort + 1 + i,
    peerPort: basePort + 11 + i,
    metricsPort: basePort + 21 + i,
    httpPort: basePort + 31 + i,
  }));
}

/** Client addresses of the dev cluster at `basePort`, in node order. */
export function devClientEndpoints(basePort = DEFAULT_DEV_BASE_PORT, host = '127.0.0.1', count = DEV_NODE_COUNT): string[] {
  return devNodePorts(basePort, count).map((n) => `${host}:${n.clientPort}`);
}
