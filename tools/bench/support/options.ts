/** `--name=N` from a diagnostic tool's arguments: a positive integer, `fallback` when absent. */
export function positiveIntegerOption(args: string[], name: string, fallback: number): number {
  const value = args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const parsed = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`--${name} must be a positive integer`);
  return parsed;
}
