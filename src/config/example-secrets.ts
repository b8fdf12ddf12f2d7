/**
 * Secret values published as examples: in .env.example, the README, docs/ and the manifests' example
 * files (now or in an earlier release), and the sample secrets of the specifications settle follows.
 * Anyone holding the repository holds them, so a secret variable set to one is refused at start.
 * test/unit/config-secrets.test.ts greps the repository's documentation for secret-looking values and
 * checks each is refused: a new example goes on this list, or the test fails.
 */
export const EXAMPLE_SECRETS: readonly string[] = [
  // .env.example before placeholders (the first is also the Standard Webhooks specification's sample).
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
  'change-me-to-a-long-random-token',
  // docs/providers.md's signed-by-hand examples (the Adyen key is the one in Adyen's own docs).
  'whsec_docsExampleStripeSecret0123456789',
  '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
  'adyen-notifications:docs-example-password',
  // Square's published signature test vector (its SDKs' and src/providers/square/fixtures/).
  'Ibxx_5AKakO-3qeNVR61Dw',
  // .env.example's placeholders: refused as weak already, listed so that stays true.
  'whsec_CHANGE_ME',
  'CHANGE_ME',
  'postgres://settle:CHANGE_ME@127.0.0.1:5432/settle',
];

const KNOWN = new Set(EXAMPLE_SECRETS.map((value) => value.toLowerCase()));

/**
 * True when `value`, or one of its comma- or line-separated items, is a published example (compared
 * without case: hex keys are the same key in either case).
 */
export function isExampleSecret(value: string): boolean {
  const items = [value, ...value.split(/[,\n]/)].map((item) => item.trim().toLowerCase());
  return items.some((item) => KNOWN.has(item));
}
