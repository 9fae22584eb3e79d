/**
 * The API level we implement. Clients gate wire formats on it, so it is reported
 * identically by GET /server_settings and POST /register: keep it in this one place.
 * Feature level 496 is the newest level named by our spec (Zulip 12.0 development series).
 */
export const ZULIP_FEATURE_LEVEL = 496;
export const ZULIP_VERSION = '12.0-dev+parley';
export const ZULIP_MERGE_BASE = '12.0-dev+parley';
export const PARLEY_VERSION = '0.1.0';

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;
export const MAX_STREAM_NAME_LENGTH = 60;
export const MAX_STREAM_DESCRIPTION_LENGTH = 1024;
export const MAX_USER_GROUP_NAME_LENGTH = 100;
export const MAX_FILE_UPLOAD_SIZE_MIB = 25;
