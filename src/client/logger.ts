// The logging surface the SDK needs. pino's Logger satisfies it structurally, so users pass their
// pino instance (or a child) and the SDK never decides where logs go.
export interface ClientLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child?(bindings: Record<string, unknown>): ClientLogger;
}

const noop = (): void => {};

/** Discards everything; the default so the SDK is silent unless given a logger. */
export const silentLogger: ClientLogger = { debug: noop, info: noop, warn: noop, error: noop };

/** A child logger when the logger supports it, else the logger itself. */
export function childLogger(logger: ClientLogger, bindings: Record<string, unknown>): ClientLogger {
  return logger.child ? logger.child(bindings) : logger;
}
