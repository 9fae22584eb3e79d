import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { registerDraftRoutes } from './drafts.js';
import { registerNavigationViewRoutes } from './navigation_views.js';
import { registerSavedSnippetRoutes } from './saved_snippets.js';
import { registerPlaygroundRoutes } from './playgrounds.js';
import { registerRealmDomainRoutes } from './realm_domains.js';
import { registerPushRoutes } from './push.js';
import { registerRealmImageRoutes } from './realm_images.js';
import { registerRealmExportRoutes } from './realm_export.js';

/** Per-user and per-organization features: drafts, views, snippets, playgrounds, domains, push tokens, icon and logos, data exports. */
export function registerOrgRoutes(app: FastifyInstance, services: Services): void {
  registerDraftRoutes(app, services);
  registerNavigationViewRoutes(app, services);
  registerSavedSnippetRoutes(app, services);
  registerPlaygroundRoutes(app, services);
  registerRealmDomainRoutes(app, services);
  registerPushRoutes(app, services);
  registerRealmImageRoutes(app, services);
  registerRealmExportRoutes(app, services);
}
