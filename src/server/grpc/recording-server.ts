import { Server, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';

/** One service as it was registered on the client port: its definition and its handlers. */
export interface RegisteredService {
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

/**
 * The client port's gRPC server, remembering every service added to it, so the HTTP gateway
 * (server/http/json-gateway.ts) calls exactly the handler functions the gRPC port calls: one
 * implementation per method, two transports.
 */
export class RecordingServer extends Server {
  readonly services: RegisteredService[] = [];

  override addService(definition: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    super.addService(definition, implementation);
    this.services.push({ definition, implementation });
  }
}
