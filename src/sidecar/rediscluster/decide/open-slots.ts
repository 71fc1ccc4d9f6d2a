// Slots left migrating or importing (a move interrupted by a crash of a pod or of a sidecar) are
// finished or rolled back on every round, before anything else moves. Pure.
// Invariants:
// - A slot migrating from S to D is finished towards D when D answers as a healthy master and
//   is still its shard's master; when D is gone, or restarted after its replica took its shard
//   over, towards the master that replaced D in its shard (its replica holds what D took);
//   only when neither exists is it rolled back: S keeps the slot (SETSLOT STABLE).
// - A slot only importing (its source already closed it, or restarted) is drained: the keys the
//   importer holds go to the slot's owner (MIGRATE without opening the slot), then the importer
//   closes it. Keys are never dropped: a node holding keys of a slot is never told the slot is
//   elsewhere before they left it (Redis refuses that too).
// - Nothing is done about a slot whose owner or source does not answer: its state stays until it
//   does (a move needs both ends).
import { shardMaster } from './shard-master.ts';
import { healthyMaster, type Topology } from './topology.ts';
import type { ClusterNode, ClusterStep, Decided, Hold } from './types.ts';

/** The node's own answer lists the slot among those it serves. */
function serves(node: ClusterNode, slot: number): boolean {
  return node.slots.some(([a, b]) => slot >= a && slot <= b);
}

export function resolveOpenSlots(t: Topology): Decided {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const podOf = (id: string) => t.nodes.get(id)?.pod?.name;
  for (const open of t.openSlots) {
    const { slot } = open;
    const owner = t.owner[slot] ?? null;
    const m = open.migrating[0];
    if (m) {
      const source = t.nodes.get(m.node)!;
      const target = t.nodes.get(m.to);
      if (!healthyMaster(source)) {
        holds.push({
          key: `open/${slot}`,
          reason: `slot ${slot} is migrating from a node that does not answer as a master`,
          warn: false,
        });
        continue;
      }
      if (!serves(source, slot)) {
        // The slot moved on without the source being told; what it still holds goes to the owner.
        const ownerNode = owner === null ? undefined : t.nodes.get(owner);
        if (healthyMaster(ownerNode) && ownerNode.id !== source.id) {
          steps.push({
            kind: 'move',
            slot,
            from: source.pod!.name,
            to: ownerNode.pod!.name,
            cold: true,
            reason: `slot ${slot} is served by ${ownerNode.pod!.name} but ${source.pod!.name} was left migrating it: its keys go to the owner`,
          });
        } else
          holds.push({
            key: `open/${slot}`,
            reason: `slot ${slot} is left migrating on ${source.pod!.name}, which does not serve it, and its owner does not answer`,
            warn: false,
          });
        continue;
      }
      // A target that answers as a master but whose shard is served by another node restarted
      // after its replica took over (it becomes that replica's replica once gossip reaches it):
      // what it imported is on the node that replaced it, so the move is finished there.
      const current = target && target.shard !== null ? shardMaster(t, target.shard) : null;
      const replacedBy = current?.serving && current.node && current.node.id !== target?.id ? current.node : null;
      if (healthyMaster(target) && target.id !== source.id && !replacedBy) {
        steps.push({
          kind: 'move',
          slot,
          from: source.pod!.name,
          to: target.pod!.name,
          cold: false,
          reason: `slot ${slot} was left migrating to ${target.pod!.name}: finished`,
        });
        continue;
      }
      const shard = target?.shard ?? null;
      const heir = current?.node ?? null;
      if (healthyMaster(heir) && heir.id !== source.id) {
        const was =
          replacedBy && target?.pod
            ? `${target.pod.name}, which restarted after it was replaced`
            : `${m.to.slice(0, 8)}, which is gone`;
        steps.push({
          kind: 'move',
          slot,
          from: source.pod!.name,
          to: heir.pod!.name,
          cold: false,
          reason: `slot ${slot} was left migrating to ${was}: finished towards ${heir.pod!.name}, the master that replaced it in shard ${shard}`,
        });
        continue;
      }
      const others = open.importing.filter((i) => i.node !== source.id && healthyMaster(t.nodes.get(i.node)));
      if (owner === source.id) {
        steps.push({
          kind: 'stable',
          slot,
          pods: [source.pod!.name],
          reason: `slot ${slot} was left migrating to ${m.to.slice(0, 8)}, which is gone with no master replacing it: rolled back, ${source.pod!.name} keeps it`,
        });
        // Importers that took some keys give them back (next round: they are then only importing).
        for (const i of others)
          holds.push({
            key: `open/${slot}/${i.node}`,
            reason: `slot ${slot}: ${podOf(i.node)} imported part of it; drained next round`,
            warn: false,
          });
        continue;
      }
      holds.push({
        key: `open/${slot}`,
        reason: `slot ${slot} is migrating from ${source.pod!.name}, which no longer owns it, to a node that is gone`,
        warn: true,
      });
      continue;
    }
    for (const i of open.importing) {
      const importer = t.nodes.get(i.node)!;
      if (!healthyMaster(importer)) continue;
      const ownerNode = owner === null ? undefined : t.nodes.get(owner);
      if (owner === importer.id) {
        steps.push({
          kind: 'stable',
          slot,
          pods: [importer.pod!.name],
          reason: `slot ${slot}: ${importer.pod!.name} owns it and was still marked importing`,
        });
      } else if (healthyMaster(ownerNode)) {
        steps.push({
          kind: 'move',
          slot,
          from: importer.pod!.name,
          to: ownerNode.pod!.name,
          cold: true,
          reason: `slot ${slot} was left importing on ${importer.pod!.name} with no node migrating it: its keys go back to the owner ${ownerNode.pod!.name}`,
        });
      } else {
        holds.push({
          key: `open/${slot}`,
          reason: `slot ${slot} is importing on ${importer.pod!.name} but its owner does not answer`,
          warn: false,
        });
      }
    }
  }
  return { steps, holds };
}
