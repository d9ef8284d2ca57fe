// The JobSpec message descriptor, read from the .proto files at run time
// (server/grpc/proto-descriptors.ts). The job document format (job-doc-codec.ts) is derived from
// it, so a field added to JobSpec is readable and writable in `herald apply` files without any
// change to the CLI.
import type { DescMessage } from '@bufbuild/protobuf';
import { protoRoot } from '../../server/grpc/proto-files.js';
import { loadProtoRegistry } from '../../server/grpc/proto-descriptors.js';

export const JOB_SPEC_TYPE = 'herald.v1.JobSpec';
const JOB_PROTO = 'herald/v1/job.proto';

/** Loads and returns the descriptor of herald.v1.JobSpec (tens of ms: call once per command). */
export function loadJobSpecDescriptor(root: string = protoRoot()): DescMessage {
  const desc = loadProtoRegistry(JOB_PROTO, root).getMessage(JOB_SPEC_TYPE);
  if (desc === undefined) throw new Error(`${JOB_SPEC_TYPE} is missing from the descriptors of ${JOB_PROTO}`);
  return desc;
}
