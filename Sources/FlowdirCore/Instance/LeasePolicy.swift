/// What a machine may do with an instance's lease (docs/commands.md, "Sync
/// between machines"), as pure decisions: the engine asks these with the
/// instance's lease, whether it is shared (has a git remote), this
/// machine's name and the time.
extension Lease {
    /// Whether nodes may start (and questions open, and interrupted runs be
    /// recovered) on `me`: an instance no other machine shares, or one whose
    /// lease `me` holds. A folder copied from a machine that runs it (rsync,
    /// Syncthing) carries that machine's live lease, and nothing starts.
    public static func mayStart(_ lease: Lease?, shared: Bool, me: String, at now: Timestamp) -> Bool {
        if lease?.heldElsewhere(than: me, at: now) ?? false { return false }
        guard shared else { return true }
        guard let lease else { return false }
        return lease.host == me && lease.isLive(at: now)
    }

    /// The lease `me` writes now, or nil for none: taken when the instance
    /// is not shared (the lease travels with a copied folder), renewed once
    /// less than half of `duration` is left. A shared instance's lease is
    /// taken only by pushing it (`Syncer`), never written here first.
    public static func renewal(_ lease: Lease?, shared: Bool, me: String, at now: Timestamp, duration: Double) -> Lease? {
        guard mayStart(lease, shared: shared, me: me, at: now) else { return nil }
        if let lease, lease.host == me, lease.until.seconds - now.seconds > duration / 2 { return nil }
        if shared && lease?.host != me { return nil }
        return Lease(host: me, until: now + duration)
    }
}
