import type { ClientDeviceRow } from '../../db/repos/client_devices.js';

/** POST /register `devices`: the user's devices by ID. */
export function formatClientDevices(rows: readonly ClientDeviceRow[]): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    rows.map((d) => [
      String(d.id),
      {
        push_key_id: d.push_key_id,
        push_token_id: d.push_token_id,
        pending_push_token_id: d.pending_push_token_id,
        push_token_last_updated_timestamp: d.push_token_last_updated_timestamp,
        push_registration_error_code: d.push_registration_error_code,
      },
    ]),
  );
}
