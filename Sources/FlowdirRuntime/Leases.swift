import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Leases (docs/commands.md, "Sync between machines"): the machine that runs a
/// shared instance's jobs holds `lease: { host, until }` in `instance.yaml`;
/// another never starts a node there while it is live.
extension Engine {
    /// Whether another machine holds this instance's lease now.
    func heldElsewhere(_ rt: InstanceRuntime) -> Bool {
        rt.lease?.heldElsewhere(than: Host.name, at: clock.now()) ?? false
    }

    /// Whether nodes may start (and questions open, and interrupted runs be
    /// recovered) here: an instance no other machine shares, or one whose
    /// lease this machine holds. A lease is taken by pushing it (`Syncer`).
    func mayStart(_ rt: InstanceRuntime) -> Bool {
        // A folder copied from a machine that runs it (rsync, Syncthing) carries that machine's lease.
        if heldElsewhere(rt) { return false }
        guard rt.isShared else { return true }
        guard let l = rt.lease else { return false }
        return l.host == Host.name && l.isLive(at: clock.now())
    }

    /// `instance.yaml` with this machine's lease, taken (an instance with no
    /// git remote: the lease travels with a copied folder) or renewed past
    /// half its time (a shared one's goes out with the next sync).
    func leaseChange(_ rt: InstanceRuntime, now: Timestamp) -> InstanceStore.Change? {
        guard mayStart(rt) else { return nil }
        if let l = rt.lease, l.host == Host.name, l.until.seconds - now.seconds > options.leaseDuration / 2 { return nil }
        if rt.isShared && rt.lease?.host != Host.name { return nil }
        rt.lease = Lease(host: Host.name, until: now + options.leaseDuration)
        return .write(InstancePaths.instanceFile, InstanceCodec.encode(rt.record))
    }

    /// Renews the leases of instances with jobs running here, in their own commits.
    func renewLeases() throws {
        let now = clock.now()
        let busy = Set(running.keys.map(\.instance))
        for path in busy {
            guard let rt = instances[path], let l = rt.lease, l.host == Host.name,
                  l.until.seconds - now.seconds <= options.leaseDuration / 2, let change = leaseChange(rt, now: now) else { continue }
            try commit(rt, [change], [], event: "lease", summary: "Lease of '\(rt.title)' renewed by \(Host.name)")
            if rt.isShared {
                // Pushed once the commit is on disk (it may be written in the background).
                try rt.store.waitForBackgroundCommits()
                options.leaseRenewed(rt.path)
            }
        }
    }
}
