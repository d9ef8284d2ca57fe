import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The public API's .proto files, found from this module whether it runs from src/ or dist/. */
export const PUBLIC_PROTO_FILES = [
  'herald/v1/job.proto',
  'herald/v1/run.proto',
  'herald/v1/job_service.proto',
  'herald/v1/worker_service.proto',
  'herald/v1/cluster_service.proto',
  'herald/v1/watch_service.proto',
  'herald/v1/task_type_service.proto',
  'herald/v1/auth_service.proto',
];

export function protoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, 'herald', 'v1', 'job.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find the proto/ directory next to the Herald installation');
}
