import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import {
  checkDeleteAttachment,
  checkUploadFile,
  doDeleteAttachment,
  doUploadFile,
  fetchAttachmentsForUser,
  pathIdFromTemporaryToken,
  temporaryUploadUrl,
} from '../../actions/uploads.js';
import { fetchAttachmentByPathId } from '../../db/repos/attachments.js';
import { fetchStoredFile } from '../../db/repos/stored_files.js';
import { fetchImageAttachmentByPathId } from '../../db/repos/image_attachments.js';
import { doEnsureThumbnails } from '../../actions/thumbnails.js';
import {
  THUMBNAIL_OUTPUT_FORMATS,
  formatName,
  missingThumbnails,
  parseFormatName,
  storedFormatName,
  storedFormats,
  thumbnailPath,
} from '../../lib/thumbnail.js';
import { JsonableError, badRequest, notFound } from '../../errors.js';
import { accessAttachment } from '../../lib/access/attachments.js';
import { storedPath } from '../../lib/uploads.js';
import { filesOf } from '../../plugins/body.js';
import { endpoint, requestRealm } from '../endpoint.js';
import { p } from '../params.js';
import { authenticateFileRequest } from './file_auth.js';
import { sendFileNotFound, sendStoredFile } from './files.js';

type UploadParams = { realm_id: string; '*': string };

/** Zulip's HttpResponseForbidden for files the caller may not read. */
function sendForbidden(reply: FastifyReply): FastifyReply {
  return reply.code(403).header('Content-Type', 'text/html; charset=utf-8').send('<p>You are not authorized to view this file.</p>');
}

/** Zulip's serve_file: the upload if the caller may read it (owner, or reader of a message linking it). */
async function serveUpload(services: Services, req: FastifyRequest, reply: FastifyReply, pathId: string, download: boolean): Promise<FastifyReply> {
  const realm = await requestRealm(services, req);
  const user = await authenticateFileRequest(services, realm, req);
  const attachment = await accessAttachment(services.db.kysely, realm, user, pathId);
  if (attachment === undefined) return sendFileNotFound(reply);
  if (attachment === null) return sendForbidden(reply);
  const file = await fetchStoredFile(services.db.kysely, storedPath.upload(pathId));
  if (!file) return sendFileNotFound(reply);
  return sendStoredFile(reply, file, { fileName: attachment.file_name, cache: 'private', download });
}

/** How long a request for a thumbnail being made by another process waits for it. */
const THUMBNAIL_WAIT_MS = 10_000;

/**
 * Zulip's serve_file for `/user_uploads/thumbnail/<path_id>/<format>`: the access check of the
 * original, then the format asked for if it is one the image has or will have (made now,
 * synchronously, when the worker has not got to it yet), or the closest one made.
 */
async function serveThumbnail(services: Services, req: FastifyRequest, reply: FastifyReply, pathId: string, name: string): Promise<FastifyReply> {
  const db = services.db.kysely;
  const realm = await requestRealm(services, req);
  const user = await authenticateFileRequest(services, realm, req);
  const attachment = await accessAttachment(db, realm, user, pathId);
  if (attachment === undefined) return sendFileNotFound(reply);
  if (attachment === null) return sendForbidden(reply);
  let image = await fetchImageAttachmentByPathId(db, pathId);
  const requested = parseFormatName(name);
  if (!image || !requested) return sendFileNotFound(reply);
  const potential = THUMBNAIL_OUTPUT_FORMATS.filter((f) => image!.frames > 1 || !f.animated).map(formatName);
  let served = formatName(requested);
  let rendered = storedFormats(image);
  if (!potential.includes(served)) {
    if (rendered.length === 0) return sendFileNotFound(reply);
    if (!rendered.some((f) => storedFormatName(f) === served)) {
      // Something close: the same animation, the nearest box.
      const distance = (f: (typeof rendered)[number]) =>
        (f.animated === requested.animated ? 0 : 1e9) + Math.abs(f.max_width - requested.maxWidth) + Math.abs(f.max_height - requested.maxHeight);
      served = storedFormatName([...rendered].sort((a, b) => distance(a) - distance(b))[0]!);
    }
  } else if (!rendered.some((f) => storedFormatName(f) === served)) {
    const deadline = Date.now() + THUMBNAIL_WAIT_MS;
    while (image && missingThumbnails(image).length > 0 && Date.now() < deadline) {
      // Another process holding the row is making it: wait for it, as Zulip waits on the row lock.
      if (!(await doEnsureThumbnails(services, image.id))) await new Promise((r) => setTimeout(r, 100));
      image = await fetchImageAttachmentByPathId(db, pathId);
    }
    rendered = image ? storedFormats(image) : [];
    if (!rendered.some((f) => storedFormatName(f) === served)) return sendFileNotFound(reply);
  }
  const file = await fetchStoredFile(db, storedPath.upload(thumbnailPath(pathId, served)));
  if (!file) return sendFileNotFound(reply);
  return sendStoredFile(reply, file, { fileName: served, cache: 'private' });
}

export function registerUploadRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'POST',
    path: '/user_uploads',
    params: {},
    handler: async ({ realm, user, req }) => {
      const file = checkUploadFile(filesOf(req));
      const { url, filename } = await doUploadFile(services, realm, user, file);
      return { uri: url, url, filename };
    },
  });

  // The API form answers with a short-lived URL that needs no credentials (for native downloads).
  endpoint(app, services, {
    method: 'GET',
    path: '/user_uploads/:realm_id_str/*',
    params: { realm_id_str: p.str() },
    handler: async ({ params, realm, user, req }) => {
      const pathId = `${params.realm_id_str}/${(req.params as UploadParams)['*']}`;
      const attachment = await accessAttachment(services.db.kysely, realm, user, pathId);
      if (attachment === undefined) throw notFound('File not found.');
      if (attachment === null) throw new JsonableError('You are not authorized to view this file.', 'BAD_REQUEST', 403);
      return { url: await temporaryUploadUrl(services, pathId) };
    },
  });

  endpoint(app, services, {
    method: 'GET',
    path: '/attachments',
    params: {},
    handler: async ({ realm, user }) => fetchAttachmentsForUser(services, realm, user),
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/attachments/:attachment_id',
    params: { attachment_id: p.int() },
    handler: async ({ params, realm, user }) => {
      const row = await checkDeleteAttachment(services, realm, user, params.attachment_id);
      await doDeleteAttachment(services, realm, row);
    },
  });

  app.get('/user_uploads/temporary/:token/:filename', async (req: FastifyRequest<{ Params: { token: string; filename: string } }>, reply) => {
    const pathId = await pathIdFromTemporaryToken(services, req.params.token);
    if (pathId === null || pathId.slice(pathId.lastIndexOf('/') + 1) !== req.params.filename) return sendFileNotFound(reply);
    const [attachment, file] = await Promise.all([
      fetchAttachmentByPathId(services.db.kysely, pathId),
      fetchStoredFile(services.db.kysely, storedPath.upload(pathId)),
    ]);
    if (!attachment || !file) return sendFileNotFound(reply);
    return sendStoredFile(reply, file, { fileName: attachment.file_name, cache: 'private' });
  });

  app.get('/user_uploads/thumbnail/:realm_id/*', async (req: FastifyRequest<{ Params: UploadParams }>, reply) => {
    const rest = req.params['*'];
    const cut = rest.lastIndexOf('/');
    if (cut <= 0) return sendFileNotFound(reply);
    return serveThumbnail(services, req, reply, `${req.params.realm_id}/${rest.slice(0, cut)}`, rest.slice(cut + 1));
  });

  // Zulip's check_thumbnail_status: for the uploader, polling until the thumbnails are made.
  endpoint(app, services, {
    method: 'GET',
    path: '/thumbnail/status/:realm_id_str/*',
    params: { realm_id_str: p.str() },
    handler: async ({ params, realm, user, req }) => {
      const pathId = `${params.realm_id_str}/${(req.params as UploadParams)['*']}`;
      const db = services.db.kysely;
      const attachment = await fetchAttachmentByPathId(db, pathId);
      if (!attachment || attachment.realm_id !== realm.id || attachment.owner_id !== user.id) throw badRequest('Invalid attachment');
      const image = await fetchImageAttachmentByPathId(db, pathId);
      if (!image) throw badRequest('Invalid attachment');
      return { has_thumbnail: missingThumbnails(image).length === 0 };
    },
  });

  app.get('/user_uploads/download/:realm_id/*', async (req: FastifyRequest<{ Params: UploadParams }>, reply) =>
    serveUpload(services, req, reply, `${req.params.realm_id}/${req.params['*']}`, true),
  );

  app.get('/user_uploads/:realm_id/*', async (req: FastifyRequest<{ Params: UploadParams }>, reply) =>
    serveUpload(services, req, reply, `${req.params.realm_id}/${req.params['*']}`, false),
  );

  /**
   * Previews of external images point here (markdown/links.ts), and those of uploads did
   * before thumbnails: uploads are served after the usual access check (as Zulip still does for
   * old messages); external images are a redirect, as Zulip did without a camo proxy. Only
   * signed-in users get redirected, so this is no open redirector.
   */
  app.get('/thumbnail', async (req: FastifyRequest<{ Querystring: { url?: string } }>, reply) => {
    const url = req.query.url ?? '';
    const upload = /^\/?user_uploads\/(.+)$/.exec(url);
    if (upload) return serveUpload(services, req, reply, upload[1]!, false);
    const realm = await requestRealm(services, req);
    const user = await authenticateFileRequest(services, realm, req);
    if (!user || !/^https?:\/\//i.test(url)) return sendForbidden(reply);
    return reply.redirect(url, 302);
  });
}
