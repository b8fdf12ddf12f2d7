// The rule lives with the variables' declarations (src/domain/env-variables.ts).
export { SECRET_MIN_DISTINCT, varied } from '../domain/env-variables';
