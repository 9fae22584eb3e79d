import type { ActionServices } from '../../services.js';
import { logPushSender, type PushSender } from './sender.js';

export function pushSender(services: ActionServices): PushSender {
  return services.push ?? logPushSender(services.log);
}
