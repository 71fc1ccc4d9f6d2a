// The leadership a worker checks right before every write it makes (Redis commands, pod labels,
// Secrets, Events, scale writes). One view for both kinds; what answers it (a Lease, a shard of
// the fleet's Leases) is the manager's business, not the worker's.
// Invariant: isLeader() is cheap and synchronous, so it is asked again before each write instead
// of once per round: leadership lost mid-round stops the writes that follow.

export interface LeaderView {
  isLeader(): boolean;
}
