// stdout writers: commands print results here and nothing else (errors go to stderr), so
// `herald ... --json | jq` always sees exactly one JSON document.

export function print(text: string): void {
  process.stdout.write(text);
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}
