// The standard gRPC health check (grpc.health.v1.Health/Check) against one node's client port:
// the same probe an operator's load balancer or orchestrator would use.
import { credentials, loadPackageDefinition, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';

type CheckFn = (req: { service: string }, opts: { deadline: number }, cb: (err: ServiceError | null, res?: { status: string }) => void) => void;
type HealthClient = Client & { check: CheckFn };

const def = loadPackageDefinition(loadSync(protoPath, { enums: String })) as unknown as {
  grpc: { health: { v1: { Health: new (addr: string, creds: ReturnType<typeof credentials.createInsecure>) => HealthClient } } };
};

export class HealthProbe {
  private readonly client: HealthClient;

  constructor(address: string) {
    this.client = new def.grpc.health.v1.Health(address, credentials.createInsecure());
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
