import { Metadata, type ServiceError } from '@grpc/grpc-js';

type Cb<Res> = (err: ServiceError | null, res?: Res) => void;
type UnaryMethod<Req, Res> = (req: Req, md: Metadata, opts: { deadline: Date }, cb: Cb<Res>) => unknown;

/** Calls a generated unary client method as a promise with a deadline. */
export function call<Req, Res>(client: object, method: string, request: Req, timeoutMs = 10_000): Promise<Res> {
  const fn = (client as Record<string, UnaryMethod<Req, Res>>)[method]!.bind(client);
  return new Promise((resolve, reject) => {
    fn(request, new Metadata(), { deadline: new Date(Date.now() + timeoutMs) }, (err, res) => (err ? reject(err) : resolve(res as Res)));
  });
}

/** The failure of a call that must fail. */
export async function callError(client: object, method: string, request: unknown): Promise<ServiceError> {
  try {
    await call(client, method, request);
  } catch (e) {
    return e as ServiceError;
  }
  throw new Error(`${method} succeeded but was expected to fail`);
}
