// One WorkerService.Connect stream. The Worker opens a new one per (re)connect; this wrapper
// turns grpc-js's several end-of-call events ('error', 'end', 'status') into exactly one
// onClose, and makes writes after close harmless, so the Worker's state machine can treat each
// stream as a simple object with a beginning and an end.
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { ConnectRequest, ConnectResponse, WorkerServiceClient } from '../../gen/herald/v1/worker_service.js';

export interface WorkerStreamEvents {
  onMessage(msg: ConnectResponse): void;
  /** Called once when the stream ends for any reason; `error` is undefined on a clean end. */
  onClose(error: Error | undefined): void;
}

export class WorkerStream {
  private readonly call: ClientDuplexStream<ConnectRequest, ConnectResponse>;
  private closedFlag = false;

  constructor(
    readonly address: string,
    client: WorkerServiceClient,
    private readonly events: WorkerStreamEvents,
  ) {
    this.call = client.connect();
    this.call.on('data', (msg: ConnectResponse) => {
      if (!this.closedFlag) this.events.onMessage(msg);
    });
    this.call.on('error', (err: Error) => this.finish(err));
    this.call.on('end', () => this.finish(undefined));
    this.call.on('status', () => this.finish(undefined));
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Writes one message; false (and nothing sent) when the stream is already closed. */
  send(msg: ConnectRequest): boolean {
    if (this.closedFlag) return false;
    this.call.write(msg);
    return true;
  }

  /** Half-closes (no more writes) and waits up to `waitMs` for the server to finish the call. */
  async end(waitMs: number): Promise<void> {
    if (this.closedFlag) return;
    const finished = new Promise<void>((resolve) => {
      this.call.once('status', () => resolve());
      this.call.once('error', () => resolve());
    });
    this.call.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    this.cancel();
  }

  /** Drops the stream at once. */
  cancel(): void {
    const wasOpen = !this.closedFlag;
    this.finish(undefined);
    if (wasOpen) this.call.cancel();
  }

  private finish(err: Error | undefined): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.events.onClose(err);
  }
}
