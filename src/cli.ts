import { parseArgs } from "node:util";
import { ConfigError, loadConfig, parseRateLimits } from "./config.js";
import { createLogger } from "./platform/logger.js";
import { isAppError } from "./platform/errors.js";
import { isRole, type RoleName } from "./platform/context.js";
import { createServices, openFoundation } from "./main.js";

const USAGE = `usage:
  cli --help
  cli migrate
  cli tenant create --name <name> [--platform-owner]
  cli tenant set-limits --tenant <tenantId> --limits '{"<bucket>":{"limit":<n>,"windowSeconds":<s>}}'
  cli user create --tenant <tenantId> --email <email> --role <admin|editor|viewer> [--name <name>]
  cli user disable --tenant <tenantId> --user <userId>
  cli user enable --tenant <tenantId> --user <userId>
  cli user set-role --tenant <tenantId> --user <userId> --role <admin|editor|viewer>
  cli settings rotate-key`;

class UsageError extends Error {}

function need(values: Record<string, string | boolean | undefined>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || !v) throw new UsageError(`--${name} is required`);
  return v;
}

function role(value: string): RoleName {
  if (!isRole(value)) throw new UsageError(`--role must be admin, editor or viewer, got "${value}"`);
  return value;
}

const HELP = Symbol("help");

/** The arguments; an option the CLI does not know, or one without its value, is a usage error (64). */
function parsed(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: "string" },
        tenant: { type: "string" },
        email: { type: "string" },
        role: { type: "string" },
        user: { type: "string" },
        limits: { type: "string" },
        "platform-owner": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    if (String((err as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")) throw new UsageError((err as Error).message);
    throw err;
  }
}

/**
 * Bootstrap for self-hosting (registration is outside the spec). Same environment as the server,
 * migrations applied first; prints exactly one JSON line on stdout.
 */
async function run(argv: string[]): Promise<unknown> {
  const { positionals, values } = parsed(argv);
  if (values.help) return HELP;
  const command = positionals.join(" ");
  const known = ["migrate", "tenant create", "tenant set-limits", "user create", "user disable", "user enable", "user set-role", "settings rotate-key"];
  if (!known.includes(command)) throw new UsageError(command ? `unknown command "${command}"` : "no command given");
  const config = loadConfig();
  const logger = createLogger(process.env.LOG_LEVEL ?? "warn", 2);
  const f = await openFoundation(config, logger, { shareEmbeddedDatabase: true });
  const services = createServices(f);
  try {
    const { identity } = services;
    switch (command) {
      case "migrate":
        return { migrated: true };
      case "tenant create":
        return await identity.createTenant(need(values, "name"), { platformOwner: values["platform-owner"] === true });
      case "tenant set-limits": {
        const limits = parseRateLimits(need(values, "limits"), "--limits");
        await identity.setTenantRateLimits(need(values, "tenant"), limits);
        return { tenantId: values.tenant, rateLimits: limits };
      }
      case "user create":
        return await identity.createUser(need(values, "tenant"), need(values, "email"), role(need(values, "role")), values.name);
      case "user disable":
      case "user enable":
      case "user set-role": {
        const change =
          command === "user set-role" ? { role: role(need(values, "role")) } : { disabled: command === "user disable" };
        const row = await identity.updateUser(need(values, "tenant"), need(values, "user"), change);
        return { userId: row.id, role: row.role, disabled: row.disabled, tokenVersion: row.token_version };
      }
      case "settings rotate-key":
        return await services.notifications.rotateKey();
    }
  } finally {
    await services.close();
    await f.close();
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(result === HELP ? USAGE + "\n" : JSON.stringify(result) + "\n");
    process.exit(0);
  },
  (err) => {
    if (err instanceof UsageError) console.error(`${err.message}\n${USAGE}`);
    else if (isAppError(err) || err instanceof ConfigError) console.error(`error: ${err.message}`);
    // One line for an operator; the stack only when asked for (LOG_LEVEL=debug).
    else if (err instanceof Error && process.env.LOG_LEVEL !== "debug") console.error(`error: ${err.message}`);
    else console.error(err);
    process.exit(err instanceof UsageError ? 64 : 1);
  },
);
