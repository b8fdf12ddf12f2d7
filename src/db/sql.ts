/**
 * A statement's parameters renumbered by `offset` ($1 becomes $(1 + offset)), so that it can follow
 * another's in one statement (a data-modifying WITH) and still be written, and named, once.
 */
export function shiftParameters(sql: string, offset: number): string {
  return sql.replace(/\$(\d+)\b/g, (_, n: string) => `$${Number(n) + offset}`);
}
