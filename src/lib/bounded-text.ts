/**
 * A fetch Response's body as text, refused once it passes `max` bytes: the rest is never read, and
 * the error is the caller's (`tooLarge`), so each door reports the refusal in its own vocabulary.
 */
export async function readBoundedText(
  response: Response,
  max: number,
  tooLarge: (max: number) => Error,
): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge(max);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
