// Message and service descriptors of .proto files, read at run time: proto-loader compiles the
// files, @bufbuild/protobuf turns its file descriptors into a registry. The job document format
// (cli/job-doc) and the HTTP gateway (server/http) are derived from it, so a field or method added
// to the protos needs no code in either.
import { create, createFileRegistry, fromBinary, type FileRegistry } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type DescriptorProto, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { loadSync } from '@grpc/proto-loader';

function* messagesIn(scope: string, messages: readonly DescriptorProto[]): Generator<{ scope: string; message: DescriptorProto }> {
  for (const message of messages) {
    yield { scope, message };
    yield* messagesIn(`${scope}.${message.name}`, message.nestedType);
  }
}

/** protoc's default JSON name: underscores dropped, the letter after each one upper-cased. */
function jsonNameOf(name: string): string {
  return name.replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * protobufjs (inside proto-loader) writes type names as they appear in the source ("Schedule");
 * descriptors proper hold them fully qualified (".herald.v1.Schedule"). Resolved the way protoc
 * does: from the innermost enclosing scope outwards. Fields and service methods both.
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
  const resolve = (scope: string, name: string, where: string): string => {
    if (name === '' || name.startsWith('.')) return name;
    let s = scope;
    for (;;) {
      if (defined.has(`${s}.${name}`)) return `${s}.${name}`;
      if (s === '') throw new Error(`${where}: type ${name} not found`);
      s = s.slice(0, s.lastIndexOf('.'));
    }
  };
  for (const file of files) {
    const pkg = file.package ? `.${file.package}` : '';
    for (const { scope, message } of messagesIn(pkg, file.messageType)) {
      // With keepCase, protobufjs writes the proto name as the JSON name too; protoc's is lowerCamelCase.
      for (const field of message.field) if (field.jsonName === '' || field.jsonName === field.name) field.jsonName = jsonNameOf(field.name);
      for (const field of message.field) field.typeName = resolve(`${scope}.${message.name}`, field.typeName, `${file.name}: ${message.name}.${field.name}`);
    }
    for (const service of file.service) {
      for (const m of service.method) {
        m.inputType = resolve(pkg, m.inputType, `${file.name}: ${service.name}.${m.name}`);
        m.outputType = resolve(pkg, m.outputType, `${file.name}: ${service.name}.${m.name}`);
      }
    }
  }
}

/** The registry of `files` (relative to `root`) and everything they import (tens of ms: load once). */
export function loadProtoRegistry(files: string | string[], root: string): FileRegistry {
  // keepCase: the proto field names as written (protobufjs would camelCase them).
  const pkg = loadSync(files, { includeDirs: [root], keepCase: true });
  const byName = new Map<string, FileDescriptorProto>();
  for (const def of Object.values(pkg)) {
    const protos = 'fileDescriptorProtos' in def ? (def.fileDescriptorProtos as Buffer[]) : [];
    for (const bytes of protos) {
      const file = fromBinary(FileDescriptorProtoSchema, bytes);
      if (!byName.has(file.name)) byName.set(file.name, file);
    }
  }
  const all = [...byName.values()];
  qualifyTypeNames(all);
  return createFileRegistry(create(FileDescriptorSetSchema, { file: all }));
}
