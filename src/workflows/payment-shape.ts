import { patched } from '@temporalio/workflow';
import type { ViewShape } from './operator-view';

/**
 * The payment run's patch gates. A run started today records one marker, the newest; each older
 * branch is kept only to replay the runs recorded before its patch (test/histories/<patch id>/), which
 * an unversioned worker, a reset or a query may still replay (docs/deployment.md, "Upgrades"). Each
 * newer patch implies the older ones, so a patched run never asks for them. The IDs are recorded in
 * histories and never change.
 */

/** Protects runs that upserted each search-attribute change as its own command. */
export const COALESCE_SEARCH_ATTRIBUTES_PATCH = 'coalesce-search-attributes';

/** Protects runs whose reconcile and each delivery were separate local activities (no first pass). */
export const RECONCILE_AND_DELIVER_PATCH = 'reconcile-and-deliver';

/** Protects runs that showed their outcome and delivery state on the happy path too. */
export const EXCEPTIONS_ONLY_VIEW_PATCH = 'exceptions-only-view';

/**
 * `firstPass`: the reconcile and each row's first delivery run as one local activity
 * (reconcileAndDeliver); `view`: how the run shows itself (operator-view.ts).
 */
export type RunShape = { firstPass: boolean; view: ViewShape };

/** The shape of this run, by the patch marker its history carries (a new run: the newest). */
export function runShape(): RunShape {
  if (patched(EXCEPTIONS_ONLY_VIEW_PATCH)) return { firstPass: true, view: 'exceptions' };
  if (patched(RECONCILE_AND_DELIVER_PATCH)) return { firstPass: true, view: 'coalesced' };
  return { firstPass: false, view: patched(COALESCE_SEARCH_ATTRIBUTES_PATCH) ? 'coalesced' : 'per-change' };
}
