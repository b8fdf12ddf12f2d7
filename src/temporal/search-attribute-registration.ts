import type { Client } from '@temporalio/client';
import { SETTLE_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { GrpcStatus } from './grpc-status';

/** temporal.api.enums.v1.IndexedValueType: settle's attributes are all Keyword. */
const INDEXED_VALUE_TYPE_KEYWORD = 2;

export type SearchAttributeRegistration = {
  namespace: string;
  /** Registered by this call. */
  added: string[];
  /** Already there, with the right type. */
  present: string[];
};

/**
 * Registers settle's search attributes in the namespace (`settle migrate`): idempotent, and safe from
 * several processes at once (an attribute another process added meanwhile counts as present). Needs
 * the OperatorService's AddSearchAttributes (an admin of the namespace on Temporal Cloud or a secured
 * cluster). One already registered with another type stops it with an error naming it.
 */
export async function registerSearchAttributes(
  client: Client,
  namespace: string,
): Promise<SearchAttributeRegistration> {
  const operator = client.connection.operatorService;
  const { customAttributes } = await operator.listSearchAttributes({ namespace });
  const result: SearchAttributeRegistration = { namespace, added: [], present: [] };
  const missing: Record<string, number> = {};
  for (const key of SETTLE_SEARCH_ATTRIBUTES) {
    const wanted = INDEXED_VALUE_TYPE_KEYWORD;
    const existing = customAttributes?.[key.name];
    if (existing === undefined || existing === null) missing[key.name] = wanted;
    else if (existing === wanted) result.present.push(key.name);
    else throw new Error(`search attribute ${key.name} exists in namespace ${namespace} with another type`);
  }
  if (Object.keys(missing).length === 0) return result;
  try {
    await operator.addSearchAttributes({ namespace, searchAttributes: missing });
    result.added.push(...Object.keys(missing));
  } catch (error) {
    if ((error as { code?: number }).code !== GrpcStatus.ALREADY_EXISTS) throw error;
    result.present.push(...Object.keys(missing));
  }
  return result;
}
