/**
 * JSON with object keys sorted at every depth and no insignificant white space, so two deliveries
 * of the same event hash the same however the provider ordered or spaced its fields. It works from
 * an explicit stack rather than recursion, so no nesting, however deep, overflows the call stack.
 * Imports nothing: the workflow bundle loads it (workflows/invalid-input.ts).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Pending work, last first: a value still to write, or literal text (brackets, commas, keys).
  const work: ({ value: unknown } | string)[] = [{ value }];
  while (work.length) {
    const item = work.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const current = item.value;
    if (current === null || typeof current !== 'object') {
      out.push(JSON.stringify(current));
      continue;
    }
    const parts: ({ value: unknown } | string)[] = [];
    if (Array.isArray(current)) {
      parts.push('[');
      current.forEach((element, index) => {
        if (index > 0) parts.push(',');
        parts.push({ value: element });
      });
      parts.push(']');
    } else {
      const record = current as Record<string, unknown>;
      const keys = Object.keys(record)
        .sort()
        .filter((key) => record[key] !== undefined);
      parts.push('{');
      keys.forEach((key, index) => {
        parts.push(`${index > 0 ? ',' : ''}${JSON.stringify(key)}:`);
        parts.push({ value: record[key] });
      });
      parts.push('}');
    }
    for (let index = parts.length - 1; index >= 0; index -= 1) work.push(parts[index]!);
  }
  return out.join('');
}
