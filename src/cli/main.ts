import { Command, CommanderError } from 'commander';
import { JsonableError } from '../errors.js';
import { PARLEY_VERSION } from '../version.js';
import { CliError } from './errors.js';

/** Zulip's special permissions (kept here so that usage errors need not load the server). */
const PERMISSIONS = ['can_change_user_emails', 'can_create_users', 'can_forge_sender'];

/** The commands load the server code only when they run, so usage errors answer at once. */
const commands = () => import('./commands.js');

/** Where the CLI writes: the process's streams, or a caller's (the tests run it in-process). */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

const processOutput: CliOutput = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

export function buildProgram(io: CliOutput = processOutput): Command {
  const print = (value: unknown): void => io.out(`${JSON.stringify(value)}\n`);
  const program = new Command();
  const realm = () => program.opts<{ realm: string }>().realm;
  program
    .name('parley')
    .description('Administer a Parley server (same configuration as the server: DATABASE_URL, .env)')
    .version(PARLEY_VERSION)
    .option('--realm <string_id>', 'organization (empty for the default one)', '')
    .showHelpAfterError()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();

  program
    .command('create-user')
    .description('create a user or bot; prints {user_id, email, api_key}')
    .requiredOption('--email <email>', 'email address')
    .requiredOption('--full-name <name>', 'full name')
    .option('--password <password>', 'password (none: the user cannot log in with a password)')
    .option('--role <role>', 'owner, admin, moderator, member or guest', 'member')
    .option('--bot', 'create a generic bot instead of a person')
    .action(async (opts) => print(await (await commands()).createUser(realm(), opts)));

  program
    .command('change-password')
    .description("set a user's password")
    .requiredOption('--email <email>', 'email address')
    .requiredOption('--password <password>', 'new password')
    .action(async (opts) => print(await (await commands()).changePassword(realm(), opts)));

  program
    .command('api-key')
    .description("print a user's API key as {user_id, email, api_key}")
    .requiredOption('--email <email>', 'email address')
    .action(async (opts) => print(await (await commands()).apiKey(realm(), opts)));

  program
    .command('grant')
    .description(`grant (or with --revoke, take away) a special permission: ${PERMISSIONS.join(', ')}`)
    .requiredOption('--email <email>', 'email address')
    .requiredOption('--permission <permission>', PERMISSIONS.join(' | '))
    .option('--revoke', 'take the permission away')
    .action(async (opts) => print(await (await commands()).grant(realm(), opts)));

  program
    .command('demo')
    .description('add a handful of users, channels and messages to try clients with')
    .option('--domain <domain>', 'email domain of the demo users', 'example.com')
    .option('--password <password>', 'password of every demo user', 'parley-demo')
    .action(async (opts) => print(await (await commands()).demo(realm(), opts)));

  program
    .command('push-register')
    .description("register this server with Zulip's push notification service (PUSH_NOTIFICATION_BOUNCER_URL); prints {zulip_org_id, created}")
    .requiredOption('--contact-email <email>', "the server administrator's email, for the service")
    .action(async (opts) => print(await (await commands()).pushRegister(opts)));

  program
    .command('sync-ldap')
    .description('update names, avatars, profile fields and active status from the directory (PARLEY_LDAP_*); prints counts')
    .action(async () => print(await (await commands()).syncLdap(realm())));

  program
    .command('list-users')
    .description('list the organization\'s users as JSON (active ones unless --all)')
    .option('--all', 'include deactivated users')
    .action(async (opts) => print(await (await commands()).listUsers(realm(), opts)));

  program
    .command('deactivate-user')
    .description('deactivate a user (and the bots they own); their sessions and API key stop working')
    .requiredOption('--email <email>', 'email address')
    .action(async (opts) => print(await (await commands()).deactivateUser(realm(), opts)));

  program
    .command('reactivate-user')
    .description('reactivate a deactivated user')
    .requiredOption('--email <email>', 'email address')
    .action(async (opts) => print(await (await commands()).reactivateUser(realm(), opts)));

  program
    .command('disable-two-factor')
    .description("turn off a user's two-factor authentication (lost phone and recovery codes); they can enrol again")
    .requiredOption('--email <email>', 'email address')
    .action(async (opts) => print(await (await commands()).disableTwoFactor(realm(), opts)));

  program
    .command('set-role')
    .description("change a user's role")
    .requiredOption('--email <email>', 'email address')
    .requiredOption('--role <role>', 'owner, admin, moderator, member or guest')
    .action(async (opts) => print(await (await commands()).setRole(realm(), opts)));

  program
    .command('change-email')
    .description("change a user's email address")
    .requiredOption('--email <email>', 'current email address')
    .requiredOption('--new-email <email>', 'new email address')
    .action(async (opts) => print(await (await commands()).changeEmail(realm(), opts)));

  program
    .command('create-organization')
    .description('create an organization served at <subdomain>.<EXTERNAL_URL host>, with its owner')
    .requiredOption('--subdomain <subdomain>', 'its string_id: 3-40 lowercase letters, digits and dashes')
    .requiredOption('--name <name>', 'organization name')
    .requiredOption('--owner-email <email>', "the owner's email address")
    .option('--owner-name <name>', "the owner's full name", 'Owner')
    .option('--owner-password <password>', "the owner's password (none: set one with change-password)")
    .action(async (opts) => print(await (await commands()).createOrganization(opts)));

  program
    .command('list-organizations')
    .description('list the organizations as JSON')
    .action(async () => print(await (await commands()).listOrganizations()));

  program
    .command('send-message')
    .description('send a message as a user (for scripts); prints {id, message_url, message_link}')
    .requiredOption('--sender <email>', "the sender's email address")
    .requiredOption('--type <type>', 'channel or direct')
    .requiredOption('--to <to>', 'channel name, or comma-separated recipient emails')
    .option('--topic <topic>', 'topic (channel messages)')
    .requiredOption('--content <content>', 'message text (Markdown)')
    .action(async (opts) => print(await (await commands()).sendMessage(realm(), opts)));

  program
    .command('delete-topic')
    .description('delete every message of a topic')
    .requiredOption('--channel <name>', 'channel name')
    .requiredOption('--topic <topic>', 'topic name')
    .action(async (opts) => print(await (await commands()).deleteTopic(realm(), opts)));

  program
    .command('archive-messages')
    .description('run a message retention pass now (as the servers do every PARLEY_RETENTION_INTERVAL_MS): archive expired messages, purge old archives; prints counts')
    .action(async () => print(await (await commands()).archiveMessages()));

  program
    .command('list-archived')
    .description("list the organization's archive transactions (messages removed by the retention policy), newest first")
    .option('--channel <name>', 'only those holding messages of this channel')
    .action(async (opts) => print(await (await commands()).listArchived(realm(), opts)));

  program
    .command('restore-archived')
    .description('restore archived messages (with their reactions, flags and uploads) until PARLEY_ARCHIVED_DATA_DAYS purges them; change the retention policy first, or the next pass archives them again')
    .option('--transaction <id>', 'one archive transaction (see list-archived)')
    .option('--channel <name>', "every unrestored retention transaction of a channel")
    .action(async (opts) => print(await (await commands()).restoreArchived(realm(), opts)));

  program
    .command('check')
    .description('check the database against its stored uploads, emoji and attachment links; exits 1 on any problem')
    .action(async () => {
      const report = await (await commands()).check();
      print(report);
      if (!report.ok) throw new CliError(`${report.problems.length} problem(s) found`);
    });

  program
    .command('backup')
    .description('back up the database and its uploaded files to FILE (a .tar.gz with a manifest), while servers run')
    .requiredOption('--to <file>', 'the backup file to write')
    .action(async (opts) => print(await (await commands()).backup(opts)));

  program
    .command('restore')
    .description('restore a backup into the empty database of DATABASE_URL (refuses a damaged file or a newer schema)')
    .argument('<file>', 'the backup file')
    .action(async (file: string) => print(await (await commands()).restore(file)));

  program
    .command('export')
    .description("write the organization (--realm) as a Zulip data export tarball (realm.json, messages-*.json, uploads, avatars, emoji)")
    .requiredOption('--to <file>', 'the .tar.gz to write')
    .option('--type <type>', 'public, full_with_consent (private data of consenting users) or full_without_consent', 'full_without_consent')
    .action(async (opts) => print(await (await commands()).exportRealm(realm(), opts)));

  program
    .command('import-zulip')
    .description('import a Zulip data export (directory or .tar.gz) into a new organization; prints counts, what was skipped and password reset links')
    .argument('<export>', 'the export directory or tarball')
    .requiredOption('--subdomain <subdomain>', "the new organization's string_id")
    .action(async (path: string, opts) => print(await (await commands()).importRealm('zulip', path, opts)));

  program
    .command('import-slack')
    .description("import a Slack export .zip into a new organization, as Zulip's Slack importer does; prints counts, what was skipped and password reset links")
    .argument('<zip>', 'the Slack export')
    .requiredOption('--subdomain <subdomain>', "the new organization's string_id")
    .action(async (path: string, opts) => print(await (await commands()).importRealm('slack', path, opts)));

  return program;
}

/** Runs the CLI; returns the exit status. */
export async function main(argv: readonly string[], io: CliOutput = processOutput): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv]);
    return 0;
  } catch (e) {
    // Commander has already printed its usage error (or the help it was asked for).
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof CliError || e instanceof JsonableError) {
      io.err(`Error: ${e.message}\n`);
      return 1;
    }
    io.err(`Error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}
