// The hook's quantity arithmetic is api/quantity.ts (the sidecar compares volume sizes with the
// same function); re-exported so the hook's importers keep their path.
export { parseQuantity } from '../../api/quantity.ts';
