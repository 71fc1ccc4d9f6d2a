// How every kind's redis-server starts: the passwords are fed on its standard input after the
// config file. Shared by a Redis's pods and a RedisCluster's (each prefixes its own checks).
import { OPERATOR_RULES, OPERATOR_USER } from '../../api/auth.ts';
import { CONFIG_KEY, CONFIG_MOUNT } from '../../api/labels.ts';
import { EXPORTER_USER_CONFIG_LINE, EXPORTER_USER_SCRIPT } from './exporter.ts';

/**
 * The passwords reach redis-server on its standard input (`-` reads config lines from stdin after
 * the file), from the env: never on a command line (/proc/<pid>/cmdline, `ps`) and never in the
 * ConfigMap. printf is a shell builtin, and sed gets each password on a pipe; every `"` and `\`
 * is escaped inside redis.conf's double quotes, so spaces, `#`, quotes and backslashes arrive as
 * written (no other escape survives: `\n` becomes `\\n`). Control characters never get here
 * (PASSWORD_CHECK_SCRIPT runs first). A here-document keeps `exec`, so redis-server stays the
 * container's process and gets SIGTERM itself. `redis-server` on either engine: the valkey images
 * link it to valkey-server, which reads the same config and stdin.
 * - `requirepass`: the default user's password, the one clients use (and rotate);
 * - `user redis-operator`: the operator's own user, for probes, the sidecar and replication
 *   (`masteruser`/`masterauth`), so a rotation of the clients' password never breaks a link.
 */
export const REDIS_FEED_SCRIPT = [
  `pw=$(printf '%s' "$REDIS_PASSWORD" | sed 's/[\\\\"]/\\\\&/g')`,
  `opw=$(printf '%s' "$OPERATOR_PASSWORD" | sed 's/[\\\\"]/\\\\&/g')`,
  ...EXPORTER_USER_SCRIPT,
  `exec redis-server ${CONFIG_MOUNT}/${CONFIG_KEY} - <<EOF`,
  'requirepass "$pw"',
  `user ${OPERATOR_USER} on ">$opw" ${OPERATOR_RULES.join(' ')}`,
  `masteruser ${OPERATOR_USER}`,
  'masterauth "$opw"',
  EXPORTER_USER_CONFIG_LINE,
  'EOF',
].join('\n');
