import { fetchUserClientDevices } from '../../db/repos/client_devices.js';
import { formatClientDevices } from '../../lib/format/devices.js';
import type { StateFetcher } from './types.js';

/** POST /register `devices`: the user's registered mobile devices (fetch type `device`). */
export const fetchDevicesState: StateFetcher = async ({ services, user, want }) => {
  if (!want('device')) return {};
  return { devices: formatClientDevices(await fetchUserClientDevices(services.db.kysely, user.id)) };
};
