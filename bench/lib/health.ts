// The standard gRPC health check (grpc.health.v1.Health/Check) against one node's client port:
// the same probe an operator's load balancer or orchestrator would use.
import { credentials, loadPackageDefinition, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';

type CheckFn = (req: { service: string }, opts: { deadline: number }, cb: (err: ServiceError | null, res?: { status: string }) => void) => void;
type HealthClient = Client & { check: CheckFn };

const def = loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
  grpc: { health: { v1: { Health: new (addr: string, creds: ReturnType<typeof credentials.createInsecure>, options: Record<string, number>) => HealthClient } } };
};

export class HealthProbe {
  private readonly client: HealthClient;

  constructor(address: string) {
    // Short reconnect backoff: probing a node while it restarts must not leave the channel
    // waiting out seconds of backoff after the node is back (that would inflate the timing).
    this.client = new def.grpc.health.v1.Health(address, credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': 20,
      'grpc.max_reconnect_backoff_ms': 50,
    });
  }

  /** 'SERVING', 'NOT_SERVING', … or 'UNREACHABLE' when the call fails. */
  check(timeoutMs = 500): Promise<string> {
    return new Promise((resolve) =>
      this.client.check({ service: '' }, { deadline: Date.now() + timeoutMs }, (err, res) => resolve(err ? 'UNREACHABLE' : (res?.status ?? 'UNKNOWN'))),
    );
  }

  close(): void {
    this.client.close();
  }
}
