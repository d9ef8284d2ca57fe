// Flag parsing shared by the benches: `--name value`, numbers or strings, with defaults.
export function numArg(name: string, def: number, argv = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0 || argv[i + 1] === undefined) return def;
  const v = Number(argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} wants a number, got ${argv[i + 1]}`);
  return v;
}

export function strArg(name: string, def: string, argv = process.argv): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : def;
}
