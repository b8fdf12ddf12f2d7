const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `90d`, `36h`, `30m`, `45s`, `2w` into milliseconds; undefined when it is not one of those. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  if (!match) return undefined;
  const [, amount, unit] = match;
  return Number(amount) * UNIT_MS[unit as string]!;
}

/** The largest whole unit that divides the duration: 7776000000 → `90d`. */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms % size === 0 && ms >= size) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}
