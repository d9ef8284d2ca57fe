// The JobSpec message descriptor, read from the .proto files at run time (proto-loader compiles
// them; @bufbuild/protobuf turns its file descriptors into a registry). The job document format
// (job-doc-codec.ts) is derived from it, so a field added to JobSpec is readable and writable in
// `herald apply` files without any change to the CLI.
import { create, createFileRegistry, fromBinary, type DescMessage } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type DescriptorProto, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { loadSync } from '@grpc/proto-loader';
import { protoRoot } from '../../server/grpc/proto-files.js';

export const JOB_SPEC_TYPE = 'herald.v1.JobSpec';
const JOB_PROTO = 'herald/v1/job.proto';

function* messagesIn(scope: string, messages: readonly DescriptorProto[]): Generator<{ scope: string; message: DescriptorProto }> {
  for (const message of messages) {
    yield { scope, message };
    yield* messagesIn(`${scope}.${message.name}`, message.nestedType);
  }
}

/**
 * protobufjs (inside proto-loader) writes field type names as they appear in the source
 * ("Schedule"); descriptors proper hold them fully qualified (".herald.v1.Schedule"). Resolved
 * the way protoc does: from the innermost enclosing scope outwards.
 */
function qualifyTypeNames(files: FileDescriptorProto[]): void {
  const defined = new Set<string>();
  for (const file of files) {
    const pkg = file.package ? `.${file.package}` : '';
    for (const e of file.enumType) defined.add(`${pkg}.${e.name}`);
    for (const { scope, message } of messagesIn(pkg, file.messageType)) {
      defined.add(`${scope}.${message.name}`);
      for (const e of message.enumType) defined.add(`${scope}.${message.name}.${e.name}`);
    }
  }
  for (const file of files) {
    const pkg = file.package ? `.${file.package}` : '';
    for (const { scope, message } of messagesIn(pkg, file.messageType)) {
      for (const field of message.field) {
        if (field.typeName === '' || field.typeName.startsWith('.')) continue;
        let s = `${scope}.${message.name}`;
        for (;;) {
          if (defined.has(`${s}.${field.typeName}`)) {
            field.typeName = `${s}.${field.typeName}`;
            break;
          }
          if (s === '') throw new Error(`${file.name}: ${message.name}.${field.name}: type ${field.typeName} not found`);
          s = s.slice(0, s.lastIndexOf('.'));
        }
      }
    }
  }
}

/** Loads and returns the descriptor of herald.v1.JobSpec (tens of ms: call once per command). */
export function loadJobSpecDescriptor(root: string = protoRoot()): DescMessage {
  // keepCase: the proto field names as written (protobufjs would camelCase them).
  const pkg = loadSync(JOB_PROTO, { includeDirs: [root], keepCase: true });
  const def = pkg[JOB_SPEC_TYPE];
  const protos = def !== undefined && 'fileDescriptorProtos' in def ? (def.fileDescriptorProtos as Buffer[]) : undefined;
  if (protos === undefined) throw new Error(`${JOB_PROTO} does not define ${JOB_SPEC_TYPE}`);
  const files = protos.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
  qualifyTypeNames(files);
  const desc = createFileRegistry(create(FileDescriptorSetSchema, { file: files })).getMessage(JOB_SPEC_TYPE);
  if (desc === undefined) throw new Error(`${JOB_SPEC_TYPE} is missing from the descriptors of ${JOB_PROTO}`);
  return desc;
}
