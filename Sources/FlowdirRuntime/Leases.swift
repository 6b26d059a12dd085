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
    /// recovered) here (see `Lease.mayStart`).
    func mayStart(_ rt: InstanceRuntime) -> Bool {
        Lease.mayStart(rt.lease, shared: rt.isShared, me: Host.name, at: clock.now())
    }

    /// `instance.yaml` with this machine's lease, taken or renewed (see `Lease.renewal`).
    func leaseChange(_ rt: InstanceRuntime, now: Timestamp) -> InstanceStore.Change? {
        guard let lease = Lease.renewal(rt.lease, shared: rt.isShared, me: Host.name, at: now, duration: options.leaseDuration) else { return nil }
        rt.lease = lease
        return .write(InstancePaths.instanceFile, InstanceCodec.encode(rt.record))
    }

    /// Renews the leases of instances with jobs running here, in their own commits.
    func renewLeases() throws {
        let now = clock.now()
        let busy = Set(running.keys.map(\.instance))
        for path in busy {
            // Only a lease this machine holds is renewed here; one is taken when a node starts (`start`).
            guard let rt = instances[path], rt.lease?.host == Host.name, let change = leaseChange(rt, now: now) else { continue }
            try commit(rt, [change], [], event: "lease", summary: "Lease of '\(rt.title)' renewed by \(Host.name)")
            if rt.isShared {
                // Pushed once the commit is on disk: not held in a group, and
                // written if it went to the background.
                if !rt.batch.isEmpty { try commitBatch(rt) }
                try rt.store.waitForBackgroundCommits()
                options.leaseRenewed(rt.path)
            }
        }
    }
}
