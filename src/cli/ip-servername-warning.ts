// grpc-js sends the dialled host as the TLS server name even when it is an IP address, and Node
// warns about that once per process (DEP0123) on stderr. The CLI's stderr is one line per error
// (scripts and tests read it), and dialling 127.0.0.1 or 10.0.0.1 with an IP SAN is correct TLS:
// the CLI drops that one warning, nothing else.
export function dropIpServernameWarning(): void {
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: unknown, ...rest: unknown[]) => {
    const code = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as { code?: unknown }).code : rest[1];
    if (code === 'DEP0123') return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}
