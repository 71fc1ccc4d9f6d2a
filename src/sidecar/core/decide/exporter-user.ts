// Which nodes the sidecar gives the exporter's ACL user (api/auth.ts EXPORTER_USER): pure.
// A node normally has it from its start script (EXPORTER_PASSWORD); the sidecar covers the nodes
// that do not: started before the <name>-exporter Secret existed (the env is optional, so Redis
// never waits for the exporter), or after it was made again with a new password.
// Invariants:
// - Only while the exporter is on and its password is known; never for a node that did not
//   answer this round.
// - Once per pod and password: the env is resolved when a container starts, so after the Secret
//   exists every restart of the pod's Redis brings the user itself; a new pod (new uid) or a new
//   password is done again.
// - What is applied adds the password and sets the rules, keeping the passwords the node already
//   has: the exporter container of the pod still logs in with the one it started with.
import { EXPORTER_RULES } from '../../../api/auth.ts';

export interface ExporterUserNode {
  uid: string;
  ip: string;
}

export interface ExporterUserInput {
  enabled: boolean;
  /** SHA-256 of the Secret's password; undefined until read. */
  hash: string | undefined;
  /** The nodes that answered this round. */
  nodes: readonly ExporterUserNode[];
  /** Per pod uid: the hash last applied there. */
  done: ReadonlyMap<string, string>;
}

export function decideExporterUser(input: ExporterUserInput): ExporterUserNode[] {
  const { enabled, hash, nodes, done } = input;
  if (!enabled || hash === undefined) return [];
  return nodes.filter((n) => done.get(n.uid) !== hash);
}

/** ACL SETUSER arguments after the name: on, one more password, exactly EXPORTER_RULES. */
export function exporterUserArgs(hash: string): string[] {
  return ['on', `#${hash}`, ...EXPORTER_RULES];
}
