import { OUTBOX_TARGETS, type OutboxTarget } from './outbox';

/**
 * Each delivery target's limits, shared by every worker process (docs/delivery.md, "Downstream
 * pressure"): SETTLE_<TARGET>_RATE_LIMIT (calls a second), SETTLE_<TARGET>_MAX_IN_FLIGHT (calls at
 * once) and SETTLE_<TARGET>_OPEN_AFTER (how long it may fail without a success before it is open).
 * The configuration declares them from this table for every target of DELIVERY_TARGETS.
 */
export const TARGET_LIMITS = {
  RateLimit: { suffix: 'RATE_LIMIT' },
  MaxInFlight: { suffix: 'MAX_IN_FLIGHT' },
  OpenAfterMs: { suffix: 'OPEN_AFTER' },
} as const;
export type TargetLimit = keyof typeof TARGET_LIMITS;

/** A target's limit's config key: `erpRateLimit`, `carrierOpenAfterMs`. */
export type TargetLimitKey = `${OutboxTarget}${TargetLimit}`;

export function targetLimitKey(target: OutboxTarget, limit: TargetLimit): TargetLimitKey {
  return `${target}${limit}`;
}

/** A target's limit's variable: SETTLE_ERP_RATE_LIMIT, SETTLE_CARRIER_OPEN_AFTER. */
export function targetLimitVariable(target: OutboxTarget, limit: TargetLimit): string {
  return `SETTLE_${target.toUpperCase()}_${TARGET_LIMITS[limit].suffix}`;
}

/** Every target's limit keys, in table order. */
export const TARGET_LIMIT_KEYS: TargetLimitKey[] = OUTBOX_TARGETS.flatMap((target) =>
  (Object.keys(TARGET_LIMITS) as TargetLimit[]).map((limit) => targetLimitKey(target, limit)),
);

export type TargetLimitsConfig = Partial<Record<TargetLimitKey, number>>;

/** SETTLE_<TARGET>_OPEN_AFTER's default. */
export const DEFAULT_OPEN_AFTER_MS = 60_000;

export type TargetLimits = {
  /** Calls a second; undefined: no limit. */
  ratePerSecond: number | undefined;
  /** Calls at once; undefined: no limit. */
  maxInFlight: number | undefined;
  openAfterMs: number;
};

export function targetLimits(config: TargetLimitsConfig, target: OutboxTarget): TargetLimits {
  return {
    ratePerSecond: config[targetLimitKey(target, 'RateLimit')],
    maxInFlight: config[targetLimitKey(target, 'MaxInFlight')],
    openAfterMs: config[targetLimitKey(target, 'OpenAfterMs')] ?? DEFAULT_OPEN_AFTER_MS,
  };
}

/**
 * Calls are spaced this share of a second wider than the limit asks: a call delayed on its way by
 * less than that share of a second (a busy worker, a slow connection) cannot put one call too many
 * into a second the target counts, whatever the rate.
 */
const SPACING_MARGIN = 0.05;

/** The calls a second the gate lets through to a target limited to `ratePerSecond`: less the margin. */
export function gateRate(ratePerSecond: number): number {
  return ratePerSecond / (1 + SPACING_MARGIN);
}

/** Only the targets' limits of a configuration (what the delivery activities are given). */
export function targetLimitsConfig(config: TargetLimitsConfig): TargetLimitsConfig {
  return Object.fromEntries(TARGET_LIMIT_KEYS.map((key) => [key, config[key]]));
}
