// Deliberately unsafe behaviours exist only for negative-control tests (the chaos suite proves its
// checkers catch them). Every one of them, in any layer, requires this one environment opt-in, so
// no configuration mistake alone can turn one on in production.

/** The environment opt-in every unsafe test switch requires. */
export const UNSAFE_ENV = 'HERALD_UNSAFE_TEST_SWITCHES';

/** True when the process was started with the opt-in. */
export function unsafeOptedIn(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[UNSAFE_ENV] === '1';
}
